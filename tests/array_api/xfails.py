"""The compliance suite's expected failures: test id (or a prefix ending in ``*``) -> why.
Each is strict: a case that starts passing fails the run until its line is removed."""

XFAILS = {
}
