"""From records to outputs: the layer graph, binding, shape propagation, reshape, the
checks validate reports (check) and the memory budget, the plan's steps and the passes
over them, the executor, and the Model facade (model).
"""
