"""The step scripts that pulumi-command runs (``bash steps/<name>.sh``, ``python3 -m steps.<name> apply|delete``) and
the command factory that registers them (:mod:`steps.command`)."""
