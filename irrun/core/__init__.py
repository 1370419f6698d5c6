"""From records to outputs: the layer graph, binding, shape propagation, reshape,
memory, the plan and the passes over it, the executor, and the Model facade.
"""
