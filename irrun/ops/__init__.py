"""The ops irrun runs. Importing this package registers every one of them."""

from . import adaptive_pool, avg_pool, basic, max_pool

__all__ = ["adaptive_pool", "avg_pool", "basic", "max_pool"]
