"""Hidden cases of stage 01 (see course_lib/courseware/hidden.py): the calculator's // and %, read_lines and
convert_units."""
from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage01 import from_text, in_a_workspace, linked_outside, refusal_of
from course_lib.courseware.observe import call, using
from course_lib.tools import ToolError


def _names_zero(symbol):
    """A test: a ToolError's message (refusal_of) that names ``symbol`` and says zero."""
    return lambda got: isinstance(got, str) and "zero" in got.lower() and symbol in got and \
        not got.startswith("no ToolError")


_CALCULATED = [("7 // 2", "3"), ("-7 % 3", "2"), ("9 % 4", "1"), ("5 % -3", "-1"), ("7.5 // 2", "3.0"),
               ("-(9 // 4) * 2", "-4"), ("10 - 10 // 3 % 2", "9")]
_BY_ZERO = [("0 % 0", "%"), ("1 % 0.0", "%"), ("5 // (2 - 2)", "//"), ("5 % -0.0", "%"), ("10 // 0", "//")]
_NOT_READ = [("sub",), ("",), ("   ",), ("notes.txt\0.png",), (None,), (["notes.txt"],), ("notes.txt", True, 2),
             ("notes.txt", 1, 2.0), ("notes.txt", 5), ("notes.txt", -1, 2), ("ws/../../secret.txt",),
             ("sub/../../ws2/secret.txt",), ("../ws/../secret.txt",)]
_CONVERTED = [((0, "m", "km"), "0 m = 0.0 km", "zero converts to zero"),
              ((-2, "kg", "lb"), "-2 kg = -4.409 lb", "a negative value converts too"),
              ((1500, "m", "km"), "1500 m = 1.5 km", "1500 m is 1.5 km"),
              ((1.0, "MI", "mi"), "1.0 mi = 1.0 mi", "a unit into itself"),
              ((250, "g", "lb"), "250 g = 0.551 lb", "250 g is about 0.551 lb")]
_NOT_CONVERTED = [(float("inf"), "m", "km"), (None, "m", "km"), ([5], "m", "km"), (False, "kg", "g"),
                  (5, "m", ["km"]), (5, "", "m"), (5, "m", 3), (5, "lb", "km"), (5, "k m", "m")]

HIDDEN = {
    "01.1": [
        *[Case(f"{expression} is {value}", call(expression), expected=value,
               hint="// and % follow Python's own rules: return a // b and a % b")
          for expression, value in _CALCULATED],
        *[Case(f"{expression}: a ToolError naming {symbol} and zero", using(refusal_of, expression),
               test=_names_zero(symbol), shows=f"a ToolError naming {symbol} and zero",
               hint="any zero divisor (0, 0.0, -0.0, 2 - 2) is refused, and the message names the operator")
          for expression, symbol in _BY_ZERO],
        Case("-1e308 // 1e-308 (-inf) is refused", call("-1e308 // 1e-308"), raises=ToolError,
             hint="a result that is not finite is refused"),
        Case("1e300 // 1e-300 (inf) is refused", call("1e300 // 1e-300"), raises=ToolError,
             hint="a result that is not finite is refused"),
    ],
    "01.2": [
        Case("start=4, no end: the last line", using(in_a_workspace, "notes.txt", 4), expected="4: delta"),
        Case("end=None reads to the end", using(in_a_workspace, "notes.txt", 1, None),
             expected="1: alpha\n2: beta\n3: gamma\n4: delta"),
        Case("a file in a subfolder", using(in_a_workspace, "./sub/q3.txt", 1, 1), expected="1: Q3 summary"),
        Case("an absolute path inside", using(in_a_workspace, "ws/notes.txt", 2, 2, absolute=True),
             expected="2: beta"),
        *[Case(f"read_lines{args!r} is refused", using(in_a_workspace, *args), raises=ToolError)
          for args in _NOT_READ],
        Case("a symbolic link pointing outside", using(linked_outside), test=lambda m: not m.startswith("no ToolError"),
             shows="a ToolError"),
    ],
    "01.3": [
        *[Case(label, call(*args), expected=text) for args, text, label in _CONVERTED],
        Case("value nan is refused", using(from_text, "nan", "m", "km"), raises=ToolError),
        *[Case(f"convert_units{args!r} is refused", call(*args), raises=ToolError) for args in _NOT_CONVERTED],
        Case("unknown 'yard': named, units listed", using(refusal_of, 1, "m", "yard"),
             test=lambda m: "yard" in m and "g, kg, km, lb, m, mi" in m and not m.startswith("no ToolError"),
             shows="'yard' + g, kg, km, lb, m, mi"),
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("01.1", "1 % 0.0: a ToolError naming % and zero",
     [('if b == 0:\n        raise ToolError("% by zero', 'if b is 0:\n        raise ToolError("% by zero')],
     "safe_mod tests `b is 0`: the int zero only, not 0.0 or -0.0"),
    ("01.1", "5 % -3 is -1", [("return a % b", "return a % abs(b)")],
     "safe_mod makes the result non-negative: a % abs(b)"),
    ("01.2", "start=4, no end: the last line", [("if start > len(lines):", "if start >= len(lines):")],
     "off by one: a start on the last line is refused"),
    ("01.2", "read_lines(None,) is refused",
     [("if not isinstance(path, str) or not path.strip()", "if not path.strip()")],
     "the path is not checked to be text: None raises AttributeError"),
    ("01.2", "read_lines('notes.txt', -1, 2) is refused", [("if start < 1 or", "if start == 0 or")],
     "only start 0 is refused, not a negative start"),
    ("01.3", "convert_units(inf, 'm', 'km') is refused",
     [("not math.isfinite(value)", "math.isnan(value)")], "only nan is refused: inf converts"),
    ("01.3", "convert_units(5, 'k m', 'm') is refused", [("unit.strip().lower()", 'unit.replace(" ", "").lower()')],
     "every space is removed, not only those around the name: 'k m' becomes km"),
    ("01.3", "a unit into itself", [('f"{value} {names[0]}', 'f"{value:g} {names[0]}')],
     "the value is shown with :g, so 1.0 shows as 1"),
]
