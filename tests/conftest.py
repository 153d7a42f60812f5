"""The suite uses webnn's own pytest plugin (webnn.testing.plugin: the
ml_context fixture).  Installed with pip, the package registers it through
its pytest11 entry point; run from the source tree, it is loaded here."""
from importlib import metadata


def _entry_point_registered():
    try:
        eps = metadata.entry_points()
        group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    except Exception:
        return False
    return any(ep.value.strip() == "webnn.testing.plugin" for ep in group)


if not _entry_point_registered():
    pytest_plugins = ["webnn.testing.plugin"]
