"""irrun's XML Schema of OpenVINO IR v10/v11 (``ir.xsd``), installed as ``irrun.schemas``."""
