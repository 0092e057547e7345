"""Runner shared by the Python check scripts (stats_check.py, speedrun_log_check.py,
repro_report_check.py): every function check_NAME of the script is a check; the command line names
the checks to run (all by default); the first failing one prints its message and exits 1."""
import sys


def near(name, got, want, tol):
    """Fail unless |got - want| <= tol."""
    if not abs(got - want) <= tol:
        raise AssertionError("%s: got %.12g, want %.12g (tolerance %g)" % (name, got, want, tol))


def main(scope):
    checks = {name[len("check_"):]: f for name, f in sorted(scope.items()) if name.startswith("check_")}
    script = scope.get("__file__", "check").rsplit("/", 1)[-1]
    for name in sys.argv[1:] or list(checks):
        if name not in checks:
            print("%s: unknown check '%s' (%s)" % (script, name, ", ".join(checks)), file=sys.stderr)
            return 2
        try:
            checks[name]()
        except AssertionError as e:
            print("%s %s: %s" % (script, name, e), file=sys.stderr)
            return 1
        print("ok %s" % name)
    return 0
