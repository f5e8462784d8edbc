"""The package's own refusals (a capture's, a file's, a missing part of the package), worded as the crate's: a
:class:`RelattnError` whose ``field`` names what was refused and whose message says what was given and what is
allowed."""

from ._relattn import RelattnError


def refuse(field, given, allowed):
    """A RelattnError naming ``field``, as the crate's own refusals read."""
    err = RelattnError(f"invalid {field}: got {given}; allowed: {allowed}")
    err.field, err.kind = field, "invalid"
    return err
