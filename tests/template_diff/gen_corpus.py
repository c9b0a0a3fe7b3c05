#!/usr/bin/env python3
"""Differential corpus for mmirage's Jinja2 engine.

Deterministically generates (template, context) cases covering the engine's features, renders each with
Python's stock `jinja2.Environment()`, and writes one JSON object per line to the output path:
  {"id": N, "template": "...", "context": {...}, "ok": true, "output": "..."}
  {"id": N, "template": "...", "context": {...}, "ok": false, "error": "TypeError"}
Usage: gen_corpus.py OUTPUT.jsonl
Exit status 2 with a message on stderr when jinja2 is missing.
"""
import json
import random
import sys

try:
    import jinja2
except ImportError:
    sys.stderr.write("gen_corpus.py: the Python package 'jinja2' is missing "
                     "(pip install jinja2==3.1.6 markupsafe==3.0.2)\n")
    sys.exit(2)

SEED = 20240601
rng = random.Random(SEED)

STRINGS = ["", "hello", "Hello World", "  padded  ", "héllo wörld", "ÀÉÎÕÜ ça", "straße", "日本語テキスト",
           "emoji 😀 ok", "it's", 'say "hi"', "tab\there\nnew line", "back\\slash", "a,b,,c", "MiXeD CaSe",
           "123", "-42", "3.14", " 7 ", "1e3", "0x1A", "abc-def ghi(jkl)", "<b>bold</b> &amp; text", "Ωμέγα",
           "привет мир", "ÿ end", "one two three four five six seven eight nine ten eleven twelve",
           "both ' and \"", "x", "UPPER", "lower", "Title Case Words", "  ", "a\nb\n\nc", "1_000"]
INTS = [0, 1, -1, 2, 7, -7, 10, 42, 100, -100, 255, 2147483648, 1000000000000, -3, 3]
FLOATS = [0.0, 1.5, -2.5, 0.1, 3.14159, 1e20, 1e-05, 2.675, -0.0, 100.0, 1 / 3, 2.5, 0.5, 1e16, 123456.789]
LISTS = [[], [1, 2, 3], [3, 1, 2], ["b", "a", "C"], [1, "a", None], [[1, 2], [3, 4]], [1.5, 2, -3],
         ["x"], [True, False], ["apple", "Banana", "cherry", "apple"], [5, 3, 5, 1, 3], ["é", "e", "E", "z"],
         [0, "", None, [], {}], [{"a": 1}, {"a": 2}]]
DICTS = [{}, {"a": 1, "b": 2}, {"name": "Bob", "age": 30}, {"b": 1, "A": 2, "c": None},
         {"nested": {"x": [1, 2], "y": "z"}}, {"k": "v", "items": 5}, {"z": 3, "y": 2, "x": 1}]
USERS = [{"name": "Ann", "age": 31, "active": True, "tags": ["a", "b"], "city": {"name": "Oslo"}},
         {"name": "bob", "age": 25, "active": False, "tags": [], "city": {"name": "Rome"}},
         {"name": "Cid", "age": 31, "active": True, "tags": ["c"], "city": {"name": "Lima"}},
         {"name": "dee", "age": 19, "active": False, "tags": ["a"], "city": {"name": "Oslo"}}]
SCALARS = STRINGS[:12] + INTS + FLOATS + [True, False, None]
VALUES = SCALARS + LISTS + DICTS

cases = []


def add(template, context=None):
    cases.append((template, context or {}))


def pick(pool, n=1):
    return [rng.choice(pool) for _ in range(n)]


# ---- 1. printing (Python str()) ----
for v in VALUES:
    add("{{ v }}", {"v": v})
add("{{ (1, 'a') }} {{ (1,) }} {{ () }} {{ [(1, 2), (3, 4)] }}")
add("{{ {'a': [1, {'b': None}], 'c': 'it\\'s'} }}")
add("{{ ['a\\nb', 'tab\\t', 'q\"', \"s'\", 'both\\'\"'] }}")
add("{{ [1e20, 1e-7, 0.1, -0.0, 1.0, 1e16, 123456789012345678.0] }}")
add("{{ missing }}|{{ missing is defined }}|{{ missing is undefined }}")
add("{{ none }} {{ None }} {{ true }} {{ True }} {{ false }}")

# ---- 2. arithmetic and operators ----
NUMS = INTS[:11] + FLOATS[:10] + [True]
for _ in range(90):
    a, b = pick(NUMS, 2)
    op = rng.choice(["+", "-", "*", "/", "//", "%", "**"])
    if op == "**":
        a = rng.choice([2, 3, -2, 1.5, 0, 10, -1, 0.5])
        b = rng.choice([0, 1, 2, 3, 5, -1, -2, 0.5, 10])
    add("{{ a %s b }}" % op, {"a": a, "b": b})
for expr in ["7 // 2", "-7 // 2", "7 // -2", "-7 % 3", "7 % -3", "7.5 // 2", "-7.5 % 2", "2 ** 10", "2 ** -1",
             "-2 ** 2", "2 ** 3 ** 2", "10 / 4", "10 / 5", "1 / 3", "0.1 + 0.2", "3 * 'ab'", "'ab' * 3",
             "[1] * 3", "[1, 2] + [3]", "'a' + 'b'", "1 + 2 * 3 - 4", "(1 + 2) * 3", "-(3)", "+3", "- -3",
             "10 - 2 - 3", "2 * 3 % 4", "1 ~ 2 ~ 'x'", "1 + 1.5", "True + True", "5 // 0.5", "1e3",
             "1_000 + 1", "0x10 + 0o10 + 0b10", "9223372036854775807 - 1", "-9223372036854775807 - 1",
             "(2 ** 62) + (2 ** 61)", "1 / 0", "1 // 0", "1 % 0", "1.0 / 0", "'a' + 1", "1 + 'a'",
             "[1] + 'a'", "'a' - 'b'", "None + 1", "'abc' * -1", "3 - True", "0 ** 0", "0.0 ** -1",
             "'%s-%s' % (1, 2)", "'%d%%' % 50", "'%5.2f|%-5d|%05d|%x|%X|%o' % (3.14159, 42, 42, 255, 255, 8)",
             "'%s' % [1, 2]", "'%(a)s and %(b)r' % {'a': 1, 'b': 'x'}", "'%s %s' % (1,)", "'%s' % (1, 2)",
             "'%r' % 'it\\'s'", "'%.3s' % 'abcdef'", "'%10s|%-10s|' % ('r', 'l')", "'%+d % d' % (5, 5)",
             "'%e %g %G' % (12345.678, 0.00001234, 1e20)", "'%c%c' % (65, 'b')", "'%i' % 3.9", "'%#x %#o' % (255, 8)",
             "'no args' % ()", "'%s' % none", "'%d' % 'x'", "'%f' % 2", "'%.0f %.0f' % (0.5, 1.5)"]:
    add("{{ %s }}" % expr)

# ---- 3. comparisons and logic ----
CMP = INTS[:6] + FLOATS[:4] + ["a", "b", "", "B"] + [None, True, [1, 2], [1, 3]]
for _ in range(60):
    a, b = pick(CMP, 2)
    op = rng.choice(["==", "!=", "<", "<=", ">", ">=", "in", "not in", "and", "or"])
    if op in ("in", "not in"):
        b = rng.choice(["abc", [1, 2, 3], {"a": 1}, ["a", None], "", [], [[1, 2]], None, 5])
        a = rng.choice(["a", "d", 1, 4, None, "", [1, 2], "bc"])
    add("{{ a %s b }}" % op, {"a": a, "b": b})
for expr in ["1 < 2 < 3", "3 > 2 > 2", "1 == 1.0", "1 == True", "'a' < 'b' <= 'b'", "[1, 2] < [1, 3]",
             "not 1", "not ''", "not not []", "0 or ''", "0 or 'x'", "'a' and 'b'", "'' and 'b'", "none or 0",
             "1 if true else 2", "1 if false else 2", "'y' if [] else 'n'", "(1 if false)", "x if x else 'd'",
             "1 in [1.0]", "'' in 'abc'", "'a' not in ['a']", "none is none", "(1, 2) == [1, 2]",
             "{'a': 1} == {'a': 1}", "'b' > 'B'", "'é' > 'z'", "None == None", "x == x", "x != 1"]:
    add("{{ %s }}" % expr)

# ---- 4. literals, subscripts, slicing, attributes ----
for expr in ["'a\\tb\\n'|length", "\"dq\" ~ 'sq'", "'x' 'y'", "[1, 2, 3][0]", "[1, 2, 3][-1]", "[1, 2, 3][5]",
             "'héllo'[1]", "'héllo'[1:3]", "'héllo'[::-1]", "[1, 2, 3, 4, 5][1:4]", "[1, 2, 3, 4, 5][::2]",
             "[1, 2, 3, 4, 5][::-2]", "[1, 2, 3][-2:]", "[1, 2, 3][:-1]", "'abc'[5:]", "[1, 2, 3][3:0:-1]",
             "{'a': 1}['a']", "{'a': 1}.a", "{'a': 1}.b", "{'a': {'b': 2}}.a.b", "{'a': [10, 20]}.a.1",
             "[1, 2][0:1][0]", "(1, 2, 3)[1:]", "'abc'[1]", "'abc'.upper", "{}.x", "[][0]", "'abc'[0:10:0]"]:
    add("{{ %s }}" % expr)
for t in ["{{ d.a }}", "{{ d['a'] }}", "{{ d.missing }}", "{{ d.missing.x }}", "{{ l.0 }}", "{{ l[1] }}",
          "{{ l[10] }}", "{{ s.x }}", "{{ n.x }}", "{{ u.x }}", "{{ u['x'] }}", "{{ d.nested.x[1] }}",
          "{{ s[0] }}{{ s[-1] }}", "{{ d.get('a') }}|{{ d.get('zz') }}|{{ d.get('zz', 'dflt') }}",
          "{{ d.items()|list }}", "{{ d.keys()|list }}", "{{ d.values()|list }}", "{{ d.items() }}",
          "{{ d.keys() }}", "{{ d.values() }}", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
          "{{ l.index(2) }}|{{ l.count(3) }}", "{{ l.index(99) }}", "{{ d.items }}"]:
    add(t, {"d": {"a": 1, "nested": {"x": [1, 2]}, "b": "two"}, "l": [1, 2, 3, 3], "s": "héllo", "n": None})

# ---- 5. string methods ----
METHODS = ["upper()", "lower()", "title()", "capitalize()", "strip()", "lstrip()", "rstrip()", "split()",
           "split(',')", "split(' ', 1)", "rsplit(' ', 1)", "splitlines()", "replace('l', 'L')",
           "replace('o', '0', 1)", "startswith('h')", "endswith('d')", "count('l')", "find('o')", "rfind('o')",
           "zfill(8)", "center(15, '*')", "ljust(12, '.')", "rjust(12)", "isdigit()", "isalpha()", "isupper()",
           "islower()", "isspace()", "swapcase()", "partition(' ')", "strip('ho')", "split('l')",
           "startswith(('x', 'he'))", "replace('', '-')", "casefold()", "istitle()", "isalnum()",
           "removeprefix('he')", "removesuffix('ld')", "index('z')", "split('')"]
for s in ["hello world", "Héllo Wörld", "  spaced out  ", "a,b,,c", "ÀÉÎ straße", "123", "-5", "line1\nline2\r\nline3",
          "Title Case", "ÿ", "Ωμέγα ΣΑΣ"]:
    for m in rng.sample(METHODS, 9):
        add("{{ s.%s }}" % m, {"s": s})
for t in ["{{ ', '.join(['a', 'b']) }}", "{{ '-'.join('abc') }}", "{{ ''.join([1, 2]) }}",
          "{{ '{} and {}'.format('x', 2) }}", "{{ '{0}{1}{0}'.format('a', 'b') }}", "{{ '{name}!'.format(name='Bo') }}",
          "{{ '{:>6}|{:<6}|{:^7}|'.format('r', 'l', 'c') }}", "{{ '{:.2f} {:5d} {:05.1f} {:,}'.format(3.14159, 42, 2.5, 1234567) }}",
          "{{ '{:x} {:b} {:o} {:#x} {:+d}'.format(255, 5, 8, 255, 3) }}", "{{ '{!r} {!s}'.format('a', 'b') }}",
          "{{ '{:%}'.format(0.25) }}", "{{ '{:e}'.format(12345.6789) }}", "{{ '{} {}'.format(1.5, none) }}",
          "{{ '{}'.format(true) }}", "{{ '{:>5}'.format(true) }}", "{{ '{0[0]} {1[a]}'.format([7], {'a': 8}) }}",
          "{{ '{'.format(1) }}", "{{ '{:*^9}'.format('mid') }}", "{{ '{:.3}'.format('abcdef') }}",
          "{{ '{:g}'.format(0.0001) }}", "{{ '{:.3}'.format(2.0) }}", "{{ '{:10.3f}|'.format(-1.5) }}",
          "{{ s.split()|join('+') }}", "{{ s.upper().lower().title() }}", "{{ s.split(',')[1] }}"]:
    add(t, {"s": "alpha, beta gamma"})

# ---- 6. filters, one argument ----
UNARY = ["upper", "lower", "title", "capitalize", "trim", "length", "count", "first", "last", "list",
         "reverse|list", "sort", "unique|list", "string", "int", "float", "abs", "round", "tojson", "wordcount",
         "striptags", "e", "escape", "safe", "sum", "min", "max", "dictsort", "items|list", "default",
         "center", "urlencode", "list|length", "string|length", "reverse"]
for v in VALUES + USERS[:1]:
    for f in rng.sample(UNARY, 5):
        add("{{ v|%s }}" % f, {"v": v})
for f in UNARY:
    add("{{ u|%s }}" % f)

# ---- 7. filters with arguments ----
FILTER_ARGS = [
    "truncate(9)", "truncate(9, true)", "truncate(10, false, '..')", "truncate(5, leeway=0)", "truncate(3, end='!')",
    "truncate(30)", "truncate(2)", "indent", "indent(2)", "indent(2, true)", "indent(2, first=true, blank=true)",
    "indent('> ')", "replace('a', 'A')", "replace('e', '', 1)", "join(', ')", "join", "default('dflt')",
    "default('dflt', true)", "d('x', boolean=true)", "round(2)", "round(1, 'floor')", "round(1, 'ceil')",
    "round(-1)", "round(method='floor')", "int(-1)", "int(default=7)", "int(base=16)", "float(9.5)",
    "center(20)", "wordwrap(10)", "wordwrap(5, false)", "wordwrap(12, wrapstring='|')", "batch(2)|list",
    "batch(3, 'x')|list", "slice(2)|list", "slice(3, 0)|list", "sort(reverse=true)", "sort(case_sensitive=true)",
    "unique(case_sensitive=true)|list", "map('upper')|list", "map('string')|join('-')", "select|list",
    "reject|list", "select('odd')|list", "reject('none')|list", "select('equalto', 1)|list",
    "select('in', [1, 'a', 'b'])|list", "format(1)", "tojson(indent=2)", "max(case_sensitive=true)",
    "min(case_sensitive=true)", "sum(start=10)", "first|upper", "length|string", "dictsort(reverse=true)",
    "dictsort(by='value')", "dictsort(true)", "attr('upper')", "default(none)|string", "list|sort|join(',')",
]
for _ in range(170):
    v = rng.choice(VALUES)
    f = rng.choice(FILTER_ARGS)
    add("{{ v|%s }}" % f, {"v": v})
for t in ["{{ users|map(attribute='name')|join(', ') }}", "{{ users|map(attribute='city.name')|unique|list }}",
          "{{ users|map(attribute='nick', default='?')|list }}", "{{ users|selectattr('active')|map(attribute='name')|list }}",
          "{{ users|rejectattr('active')|map(attribute='name')|list }}",
          "{{ users|selectattr('age', 'gt', 30)|map(attribute='name')|join }}",
          "{{ users|selectattr('age', 'equalto', 31)|list|length }}", "{{ users|sort(attribute='name')|map(attribute='name')|list }}",
          "{{ users|sort(attribute='age,name')|map(attribute='name')|list }}",
          "{{ users|sort(attribute='age', reverse=true)|map(attribute='name')|list }}",
          "{{ users|max(attribute='age') }}", "{{ (users|min(attribute='name')).name }}", "{{ users|sum(attribute='age') }}",
          "{{ users|join(', ', attribute='name') }}", "{{ users|unique(attribute='age')|map(attribute='name')|list }}",
          "{{ users|map(attribute='tags')|map('length')|list }}", "{{ users[0].city.name|upper }}",
          "{{ users|selectattr('tags')|list|count }}", "{{ users|map(attribute='age')|select('even')|list }}",
          "{{ users|map(attribute='name')|map('title')|sort|list }}", "{{ users|tojson }}",
          "{{ users|first|dictsort }}", "{{ users|batch(3)|map('length')|list }}", "{{ users|selectattr('city.name', 'eq', 'Oslo')|list|length }}",
          "{{ users|map(attribute='0')|list }}", "{{ users|selectattr('name', 'lower')|map(attribute='name')|list }}",
          "{{ users|map(attribute='age')|sum / users|length }}", "{{ users|attr('x') }}", "{{ users|map('nofilter')|list }}"]:
    add(t, {"users": USERS})

# ---- 8. tests ----
TESTS = ["defined", "undefined", "none", "number", "integer", "float", "string", "mapping", "iterable",
         "sequence", "boolean", "true", "false", "even", "odd", "divisibleby 3", "divisibleby(2)", "eq 1",
         "ne 1", "lt 5", "gt 5", "le 0", "ge 0", "== 'a'", "in [1, 'a', none]", "upper", "lower",
         "sameas none", "sameas true", "sameas 1", "callable", "escaped", "filter", "test", "not none",
         "not defined", "equalto 2", "lessthan 3", "greaterthan 3"]
for v in SCALARS + LISTS[:4] + DICTS[:2]:
    for t in rng.sample(TESTS, 4):
        add("{{ v is %s }}" % t, {"v": v})
for t in TESTS:
    add("{{ u is %s }}" % t)
add("{{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }} {{ 3 is odd and 4 is even }}")
add("{{ x is divisibleby 0 }}", {"x": 5})

# ---- 9. statements ----
STMTS = [
    "{% if x %}yes{% else %}no{% endif %}",
    "{% if x > 5 %}big{% elif x > 0 %}small{% elif x == 0 %}zero{% else %}neg{% endif %}",
    "{% for i in items %}{{ loop.index }}/{{ loop.length }}:{{ i }}{% if not loop.last %}, {% endif %}{% endfor %}",
    "{% for i in items %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}|{% endfor %}",
    "{% for i in items %}{{ loop.cycle('odd', 'even') }}{% endfor %}",
    "{% for i in items %}[{{ loop.previtem }}<{{ i }}>{{ loop.nextitem }}]{% endfor %}",
    "{% for i in items %}{{ i }}{% else %}empty{% endfor %}",
    "{% for i in items if i %}{{ i }}-{{ loop.index }}/{{ loop.length }} {% endfor %}",
    "{% for i in items %}{% for j in items %}{{ i }}{{ j }} {% endfor %}{% endfor %}",
    "{% for a, b in pairs %}{{ a }}={{ b }};{% endfor %}",
    "{% for k in d %}{{ k }}{% endfor %}",
    "{% for k, v in d|dictsort %}{{ k }}:{{ v }} {% endfor %}",
    "{% for c in 'héllo' %}{{ c }}.{% endfor %}",
    "{% for i in range(3) %}{{ i }}{% endfor %}|{% for i in range(1, 10, 3) %}{{ i }}{% endfor %}|{{ range(5)|list }}",
    "{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}",
    "{% set y = x * 2 %}{{ y }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}",
    "{% set s %}block {{ x }}{% endset %}[{{ s }}]",
    "{% set s | upper %}filtered {{ x }}{% endset %}{{ s }}",
    "{% set n = 0 %}{% for i in items %}{% set n = n + 1 %}{% endfor %}{{ n }}",
    "{% set ns = namespace(n=0) %}{% for i in items %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
    "{% set ns = namespace(found=false) %}{% for i in items %}{% if i == x %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}",
    "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', 'Hi') }} {{ greet(greeting='Yo', name='Cy') }}",
    "{% macro li(v) %}<li>{{ v }}</li>{% endmacro %}{% for i in items %}{{ li(i) }}{% endfor %}",
    "{% macro f(a, b) %}{{ a }}|{{ b }}|{{ b is defined }}{% endmacro %}{{ f(1) }}",
    "{% macro f() %}{{ x }}{% endmacro %}{% set x = 'inner' %}{{ f() }}",
    "{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(4) }}",
    "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}",
    "{% raw %}{{ not rendered }}{% endraw %}",
    "a {# comment #} b",
    "a  {#- trimmed -#}  b",
    "x   {{- x -}}   y",
    "x\n  {%- if true %} in {% endif -%}\n  y",
    "{% for i in items -%}\n  {{ i }}\n{%- endfor %}",
    "line1\n{% if true %}\nline2\n{% endif %}\nline3\n",
    "trailing newline\n",
    "two trailing\n\n",
    "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}",
    "{% filter upper %}shout {{ x }}{% endfilter %}",
    "{{ x }}{% set x = 'reset' %}{{ x }}",
    "{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = x + i %}{{ x }};{% endfor %}{{ x }}",
    "{% for x in items %}{{ x }}{% endfor %}{{ x }}",
    "{% if x is number and x > 0 %}pos{% endif %}",
    "{% for a, b in items %}{{ a }}{% endfor %}",
    "{% for i in 42 %}{% endfor %}",
    "{% set d2 = {'k': x} %}{{ d2.k }}{{ d2 }}",
    "{% if items|length > 2 %}many{% endif %}",
    "{{ items|join(', ') if items else 'none' }}",
    "{% for row in matrix %}{% for cell in row %}{{ cell }}{% if not loop.last %},{% endif %}{% endfor %};{% endfor %}",
    "{% for i in items|sort(reverse=true) %}{{ i }}{% endfor %}",
    "{% for i in items %}{% if loop.index is even %}{{ i }}{% endif %}{% endfor %}",
    "{%+ if true %}plus{% endif %}",
]
CONTEXTS = [{"x": 3, "items": [1, 2, 3]}, {"x": -4, "items": []}, {"x": 0, "items": ["a", "", "c", None]},
            {"x": 10, "items": [3, 1, 2, 2]}, {"x": "str", "items": ["é", "b"]}, {"x": None, "items": [0]},
            {"x": 2.5, "items": [[1, 2], [3, 4]]}]
for t in STMTS:
    for c in rng.sample(CONTEXTS, 3):
        ctx = dict(c)
        ctx.update({"pairs": [["a", 1], ["b", 2]], "d": {"b": 2, "a": 1, "C": 3}, "matrix": [[1, 2], [3, 4]]})
        add(t, ctx)

# ---- 10. syntax errors and render errors ----
for t in ["{{ x }", "{{ x", "{% if x %}", "{% endfor %}", "{% for %}", "{{ x|nosuchfilter }}",
          "{{ x is nosuchtest }}", "{% unknowntag %}", "{{ 1 + }}", "{{ ) }}", "{% if x %}{% endfor %}",
          "{{ x.y.z }}", "{{ missing.attr }}", "{{ missing() }}", "{{ 'a' < 1 }}", "{{ [1, 'a']|sort }}",
          "{{ x['a']['b'] }}", "{% set %}", "{{ 'abc'|int + 'x' }}", "{{ 5|length }}", "{{ none|length }}",
          "{{ 1|first }}", "{{ {'a': 1}|join }}", "{{ 'x'|truncate(1) }}", "{% macro m( %}{% endmacro %}",
          "{{ 'a' 'b' }}", "{{ [1, 2 }}", "{# unterminated", "{{ 1 if }}"]:
    add(t, {"x": {"a": 1}})

# ---- 11. random compositions ----
PIPES = ["upper", "lower", "title", "trim", "length", "string", "first", "last", "list", "reverse|list",
         "sort", "unique|list", "join('/')", "replace('a', 'o')", "truncate(8)", "wordcount", "capitalize",
         "center(11)", "tojson", "default('d')", "int", "float", "abs", "round(1)", "e", "indent(1)"]
for _ in range(120):
    v = rng.choice(VALUES)
    chain = "|".join(rng.sample(PIPES, rng.choice([1, 2, 3])))
    add("{{ v|%s }}" % chain, {"v": v})

# ---- 12. targeted edge cases ----
EDGE = [
    "{{ '{{' }} {{ '}}' }} {{ '{%' }}", "{{ 'a\\\\b' }}|{{ 'x\\x41\\u00e9\\U0001F600' }}|{{ '\\'' }}",
    "  {%- if true -%}  x  {%- endif -%}  ", "a\n{%- for i in [1, 2] %}\n{{ i }}\n{%- endfor %}\nb",
    "{%- raw -%}  raw {{ x }}  {%- endraw -%} after", "{% raw %}{% if %}{% endraw %}", "{#- c -#} x {#- c #}",
    "{{ x }}\n", "{{ x }}\r\n", "a\r\nb\rc\n", "{{- x -}}", "{{ [1, 2,] }}{{ {'a': 1,} }}{{ (1, 2,) }}",
    "{{ 'héllo wörld'|length }} {{ 'héllo'|upper }} {{ 'ÀÉÎ'|lower }} {{ 'ÿ'|upper }} {{ 'straße'|upper }}",
    "{{ 'héllo'|reverse }} {{ 'héllo'|first }} {{ 'héllo'|last }} {{ 'héllo'[1:-1] }} {{ 'héllo'|center(9) }}|",
    "{{ 'ΑΒΓ δεζ'|lower }} {{ 'привет'|upper }} {{ 'ǆ'|upper }} {{ 'Ⅷ'|lower }}",
    "{{ 'hello world'|title }} {{ 'hello-world (foo) [bar]'|title }} {{ \"they're bill's\"|title }} {{ \"they're\".title() }}",
    "{{ 'ABC def'|capitalize }} {{ 'ß'|capitalize }} {{ 'éclair'|capitalize }}",
    "{{ 3.0 }} {{ 1e300 * 10 }} {{ -1e300 * 10 }} {{ 2.5e-8 }} {{ 12345678901234567.0 }} {{ 0.000123 }}",
    "{{ 2.675|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ -2.5|round }} {{ 1.005|round(2) }} {{ 1234|round(-2) }}",
    "{{ 1250|round(-2) }} {{ 1350|round(-2) }} {{ 15.5|round(-1) }} {{ 2.345|round(2, 'floor') }} {{ -2.5|round(0, 'ceil') }}",
    "{{ '42'|int }} {{ ' 42 '|int }} {{ '4_2'|int }} {{ '42.9'|int }} {{ '-3.5e1'|int }} {{ 'x'|int }} {{ 'ff'|int(base=16) }}",
    "{{ '0x1f'|int(0, 16) }} {{ '0b101'|int(0, 2) }} {{ '0o17'|int(base=8) }} {{ '017'|int(base=0) }} {{ none|int }} {{ true|int }}",
    "{{ '1.5'|float }} {{ ' -2 '|float }} {{ 'inf'|float }} {{ 'nan'|float }} {{ 'abc'|float }} {{ '1e3'|float }} {{ []|float(2) }}",
    "{{ 'a b  c'|wordcount }} {{ 'héllo wörld, 日本語!'|wordcount }} {{ 'it\\'s-a_b'|wordcount }}",
    "{{ 'a\\nb\\nc'|indent }}|{{ 'a\\n\\nb'|indent(2, true) }}|{{ 'a\\n\\nb\\n'|indent(2, blank=true) }}|{{ ''|indent(first=true) }}",
    "{{ 'The quick brown fox jumps over the lazy dog'|wordwrap(10) }}", "{{ 'supercalifragilistic word'|wordwrap(7) }}",
    "{{ 'supercalifragilistic word'|wordwrap(7, false) }}", "{{ 'well-known state-of-the-art'|wordwrap(8) }}",
    "{{ 'a  b   c'|wordwrap(3) }}", "{{ 'para one\\n\\npara two words'|wordwrap(6) }}",
    "{{ '<p>Hi &amp; <b>bye</b></p>\\n  next  &lt;x&gt; &#65;&#x42;'|striptags }}", "{{ '<!-- c -->a<br/>b'|striptags }}",
    "{{ 'a b&c/d?é'|urlencode }} {{ {'k': 'v w', 'x': 1}|urlencode }}",
    "{{ {'b': 'é', 'a': [1, 2.5, none, true], 'c': '<&>\\''}|tojson }}", "{{ 'x\\ny\\t\"'|tojson }}",
    "{{ {'a': {'b': [1, {}]}, 'c': []}|tojson(2) }}", "{{ 1e20|tojson }} {{ -0.0|tojson }} {{ 'ÿ😀'|tojson }}",
    "{{ {'b': 1, 'a': 2, 'C': 3}|dictsort }} {{ {'b': 1, 'a': 2, 'C': 3}|dictsort(true) }} {{ {'x': 2, 'y': 1}|dictsort(by='value') }}",
    "{{ ['b', 'A', 'c', 'B']|sort }} {{ ['b', 'A', 'c', 'B']|sort(case_sensitive=true) }} {{ ['b', 'A', 'a']|unique|list }}",
    "{{ ['b', 'A', 'c']|min }} {{ ['b', 'A', 'c']|max }} {{ [3, 1.5, 2]|max }} {{ []|max }} {{ 'hello'|max }}",
    "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3, 4, 5]|batch(2, 0)|list }} {{ [1, 2, 3, 4, 5]|slice(3)|list }} {{ [1, 2, 3, 4]|slice(3, 'x')|list }}",
    "{{ [1, 2, 3]|sum }} {{ [0.1, 0.2, 0.3]|sum }} {{ [[1], [2]]|sum(start=[]) }} {{ ['a']|sum }}",
    "{{ '%s|%5s|%-5s|%.1s' % ('é', 'é', 'é', 'éa') }}", "{{ '%(x)05.1f %(y)s' % {'x': 3.14159, 'y': none} }}",
    "{{ '%d' % 3.99 }} {{ '%d' % -3.99 }} {{ '%x' % -255 }} {{ '%5.1e' % 0.000123 }} {{ '%g' % 1e-5 }} {{ '%g' % 123456789 }}",
    "{{ '%s'|format('a') }} {{ '%s-%s'|format(1, 2) }} {{ '%(a)s'|format(a=5) }} {{ '%s'|format }}",
    "{{ '{:,.2f}'.format(1234567.891) }} {{ '{:_d}'.format(1000000) }} {{ '{:08.3f}'.format(-3.14159) }} {{ '{:=+8d}'.format(42) }}",
    "{{ '{0:>{1}}'.format('x', 5) }}", "{{ '{} {}'.format(1) }}", "{{ '{:d}'.format(1.5) }}", "{{ '{:s}'.format(1) }}",
    "{{ 'a'.ljust(3, 'é') }}|{{ 'abc'.center(8) }}|{{ 'abc'.center(7) }}|{{ 'ab'.center(5, '-') }}|{{ 'ab'.center(6, '-') }}",
    "{{ '  x y  '.split(none, 1) }} {{ '  x y  '.rsplit(none, 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ''.split() }} {{ ''.split(',') }}",
    "{{ 'a\\nb\\r\\nc\\rd'.splitlines() }} {{ 'a\\nb\\n'.splitlines(true) }} {{ 'x\\x0by'.splitlines() }}",
    "{{ 'hello'.count('') }} {{ 'aaaa'.count('aa') }} {{ 'héllo'.find('l') }} {{ 'héllo'.index('o') }}",
    "{{ '-42'.zfill(6) }} {{ '+7'.zfill(4) }} {{ 'abc'.zfill(2) }} {{ 'é'.zfill(3) }}",
    "{% macro m(a, b=a ~ '!', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m('x') }}|{{ m('x', c=1) }}|{{ m(b=2, a=1) }}",
    "{% macro outer() %}[{{ inner() }}]{% endmacro %}{% macro inner() %}in{% endmacro %}{{ outer() }}",
    "{% macro m(x) %}{% set y = x * 2 %}{{ y }}{% endmacro %}{{ m(2) }}{{ y }}",
    "{% macro m() %}{{ m2 }}{% endmacro %}{{ m() }}|{{ m() ~ 'x' }}|{{ m()|length }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(a=1, b=2) }}",
    "{% for i in [1, 2] %}{% for j in ['a', 'b'] %}{{ loop.index }}{{ i }}{{ j }} {% endfor %}{{ loop.index }}|{% endfor %}",
    "{% for i in [1, 2, 3] %}{% set outer = loop %}{% for j in [1] %}{{ outer.index }}{% endfor %}{% endfor %}",
    "{% for x in [3, 1, 2]|sort %}{{ x }}{% if loop.last %}.{% else %},{% endif %}{% endfor %}",
    "{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}{{ v }}{% endfor %} {{ {'a': 1}|items|list }}",
    "{% for a, (b, c) in [[1, [2, 3]]] %}{{ a }}{{ b }}{{ c }}{% endfor %}",
    "{% for x in none %}{% endfor %}", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", "{% for a, b in ['ab', 'cd'] %}{{ b }}{{ a }}{% endfor %}",
    "{% if 0 %}a{% elif '' %}b{% elif [] %}c{% elif {} %}d{% elif none %}e{% else %}f{% endif %}",
    "{% set x = [1, 2] %}{% set y = x %}{{ y + [3] }}{{ x }}", "{% set t = (1, 2) %}{{ t }}{{ t[0] }}{{ t|list }}",
    "{% set ns = namespace(items=[]) %}{% for i in [1, 2] %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.items }}",
    "{% set ns = namespace() %}{% set ns.a = 1 %}{{ ns.a }}{{ ns.b }}", "{% set d = {} %}{% set d.a = 1 %}",
    "{% set x %}{% for i in [1, 2] %}{{ i }}{% endfor %}{% endset %}{{ x|length }}{{ x ~ x }}",
    "{% with x = 5 %}{% set y = x + 1 %}{{ y }}{% endwith %}[{{ y }}]",
    "{% filter replace('a', 'o') %}banana {{ 'cat' }}{% endfilter %}", "{% filter upper|trim %}  x  {% endfilter %}",
    "{{ range(3)|map('string')|join(',') }} {{ range(0)|list }} {{ range(10, 0, -3)|list }} {{ range(2, 2)|list }}",
    "{{ dict(a=1, b='x') }} {{ dict(a=1).a }} {{ namespace(a=1).a }}",
    "{{ [1, 2, 3]|select('gt', 1)|list }} {{ [1, 2, 3]|reject('odd')|list }} {{ ['a', 'B']|select('upper')|list }}",
    "{{ [none, 1, '']|select|list }} {{ [none, 1, '']|reject('none')|list }} {{ [1, 'a']|select('string')|list }}",
    "{{ [1, 2]|map('int')|list }} {{ ['1', 'x']|map('int', 7)|list }} {{ [1.26]|map('round', 1)|list }} {{ ['a']|map('replace', 'a', 'b')|list }}",
    "{{ x|default(5) }} {{ none|default(5) }} {{ none|default(5, true) }} {{ ''|d('e', true) }} {{ 0|default(1) }}",
    "{{ 'abc'|truncate(3) }} {{ 'abcdefghij'|truncate(5, true, '', 0) }} {{ 'hello world foo bar'|truncate(11, leeway=0) }}",
    "{{ 'hello world foo bar'|truncate(14, false, '...', 0) }} {{ 'hello'|truncate(2, end='') }} {{ 'héllo wörld ünïcode text'|truncate(15, leeway=0) }}",
    "{{ 5 is divisibleby 5 }} {{ 5.0 is divisibleby 2.5 }} {{ 4 is even }} {{ 3.0 is odd }} {{ -3 is odd }}",
    "{{ true is number }} {{ true is integer }} {{ 1.0 is integer }} {{ none is mapping }} {{ {} is mapping }} {{ 'a' is iterable }}",
    "{{ 1 is sameas 1 }} {{ none is sameas none }} {{ true is sameas 1 }} {{ [] is sequence }} {{ 5 is iterable }}",
    "{{ 'ABC' is upper }} {{ 'AbC' is upper }} {{ '123' is upper }} {{ 'abc1' is lower }} {{ 1 is lt 2 }} {{ 'a' is in 'abc' }}",
    "{{ 'x' ~ 1 ~ none ~ true ~ [1] ~ {'a': 1} ~ 1.5 }}", "{{ -x }} {{ +x }} {{ not x }}",
    "{{ x.a if x is mapping else 'no' }}", "{{ (x or {}).get('a', 'dflt') }}", "{{ x['a'] ~ x.a }}",
    "{{ [x] | length }} {{ [x, x]|unique|list }}", "{{ {'a': 1}|length }} {{ 'é😀'|length }} {{ [[]]|length }}",
    "{{ 10 // 3 * 3 + 10 % 3 }} {{ 2 ** 0.5 }} {{ (-8) // 3 }} {{ 7.0 % 2.5 }} {{ 1e16 + 1 }} {{ 0.1 * 3 }}",
    "{{ 9007199254740993 / 1 }} {{ 6 / 3 }} {{ -6 / 4 }} {{ 5 // 2.0 }} {{ -0.0 }} {{ 0 * -1.0 }}",
    "{{ 3 * [1] }} {{ 0 * 'ab' }} {{ True * 'x' }} {{ [1, 2] * 2 }} {{ (1,) * 2 }} {{ 1.5 * 2 }}",
    "{{ 'abc' < 'abd' }} {{ [1, 'a'] < [1, 'b'] }} {{ [1] < [1, 0] }} {{ 1 < 1.5 }} {{ 2 > True }} {{ 'a' in {'a': 1} }}",
    "{{ 1 if 0 else 2 if 0 else 3 }} {{ (1 if 1) }} {{ 'x' if none else '' }}|",
    "{{ x is defined and x.a is defined }} {{ y is defined and y.a }} {{ y is not defined or y.a }}",
    "{{ [1, 2, 3]|first }} {{ []|first }} {{ {'k': 1}|first }} {{ {'k': 1, 'j': 2}|last }} {{ [1, 2]|last }}",
    "{{ 'abc'|list }} {{ {'a': 1, 'b': 2}|list }} {{ (1, 2)|list }} {{ 'abc'|sort|join }} {{ {'b': 1, 'a': 2}|sort }}",
    "{{ [3, 1, 2]|reverse|list }} {{ 'abc'|reverse }} {{ {'a': 1, 'b': 2}|reverse|list }}",
    "{{ [1, 'a', 1.0, true, 'A']|unique|list }} {{ [[1], [1]]|unique|list }}",
    "{{ 'Hello'|e }} {{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|safe }} {{ '<b>'|safe|e }} {{ '<b>'|e|e }} {{ '<'|forceescape }}",
    "{{ ('<b>'|e) ~ '<' }} {{ ('<b>'|e)|length }} {{ none|e }} {{ 5|e }}",
    "{{ 'a-b'|replace('-', '') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 5|replace('5', 'five') }} {{ none|upper }}",
    "{{ '  x  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 5|trim }}|{{ '\\u3000x\\xa0'|trim }}|",
    "{{ 'abc'|center(2) }}|{{ ''|center(3) }}|{{ 'é'|center(4) }}|", "{{ 7|string ~ 1 }} {{ [1]|string }} {{ none|string|length }}",
    "{{ 'a'|attr('upper') is callable }} {{ {'a': 1}|attr('a') }}", "{{ 1|abs }} {{ -1.5|abs }} {{ true|abs }} {{ 'x'|abs }}",
    "{{ ['é', 'e', 'f']|sort }} {{ ['b', 'a']|sort(true) }} {{ [{'a': 2}, {'a': 1}]|sort(attribute='a') }}",
    "{{ [[2, 'b'], [1, 'a']]|sort }} {{ [[2, 'b'], [1, 'a']]|sort(attribute='1') }} {{ [1, none]|sort }}",
]
for t in EDGE:
    add(t, {"x": {"a": 1, "b": [1, 2]}})


def render(template, context):
    env = jinja2.Environment()
    try:
        out = env.from_string(template).render(**context)
    except Exception as exc:  # noqa: BLE001 - every Jinja/Python failure counts as "error"
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True, "output": out}


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: gen_corpus.py OUTPUT.jsonl\n")
        return 1
    seen = set()
    n = 0
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        for template, context in cases:
            key = (template, json.dumps(context, sort_keys=True))
            if key in seen:
                continue
            seen.add(key)
            res = render(template, context)
            if res.get("ok") and (" at 0x" in res["output"] or "<generator object" in res["output"]):
                continue  # identity-based reprs cannot be compared
            rec = {"id": n, "template": template, "context": context}
            rec.update(res)
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    sys.stderr.write("gen_corpus.py: wrote %d cases\n" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
