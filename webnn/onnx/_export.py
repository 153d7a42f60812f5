def export(graph, *a, **k):
    raise NotImplementedError
