"""Top-level names for sqlfluff's jinja templater (members of this package's __init__ are global)."""


def env_var(name, default=""):  # noqa: ARG001
    """dbt's env_var(), which sqlfluff's dbt builtins lack: the default, as dbt gives when unset."""
    return default
