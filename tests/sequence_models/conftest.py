# The script that makes the files here needs TensorFlow and ONNX, which the tests do not.
collect_ignore = ["make_sequence_models.py"]
