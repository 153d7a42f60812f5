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


def pytest_configure(config):
    """An options-dict member the IDL does not define is ignored with a
    webnn.UnknownOptionWarning (WebIDL); in the suite it is an error, so that
    no code of the package or of a test passes one unnoticed (pytest.warns
    still catches the expected ones).  Without a built extension the suite
    reports that itself."""
    try:
        import webnn  # noqa: F401
    except ImportError:
        return
    config.addinivalue_line("filterwarnings", "error::webnn.UnknownOptionWarning")
