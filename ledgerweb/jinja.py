"""Jinja2 for the rows of the list pages people open most (the session list, the request list):
markup still in a template, where a designer looks for it, at a fifth of the Django loop's cost.

Why, in figures (bench.page_cpu, docs/benchmarks.md): the session list's 50 rows cost ~6.6 ms
of CPU through their `{% partialdef rows %}` loop, most of the page's 13 ms, and ~1.4 ms as the
same loop in Jinja2, which compiles a template to Python once. The rest of every page stays a
Django template: the rows are handed to it as one safe string.

The templates are `templates/<app>/*.jinja`, rendered through Django's own Jinja2 backend (the
"jinja2" engine in settings.TEMPLATES) by `rows_html()` only; a Django template never includes
one. Each `{{ value }}` is escaped as Django escapes it (`&#x27;` for a quote, where Jinja2 writes
`&#39;`), so a row reads byte for byte as the Django loop wrote it; safe strings (Django's
SafeString, markupsafe's Markup: a timestamp, a row's marks) are written as they are. This
escaping is the environment's `finalize`, with Jinja2's autoescape off: every value written goes
through it, a string literal in an expression too, so `|safe` and `|e` have nothing to add.
"""

from django.contrib.humanize.templatetags.humanize import intcomma
from django.template import engines
from django.utils.safestring import SafeString, mark_safe
from jinja2 import Environment, Undefined

from ledgerweb import formatting
from ledgerweb.html_parts import css_name, escape


def _escaped_as_django_does(value) -> str:
    # Autoescape is off and this escapes instead (every {{ }} passes here): Jinja2's own would
    # wrap each value in a Markup and escape it again, a third of the rows' time.
    if hasattr(value, "__html__"):
        return value.__html__()
    return escape(value)


def _intcomma(value) -> str:
    """Django's intcomma ("1,234" in this site's one language, en-us), a whole number written
    at once: the rows show two or three per row, and Django's goes through its locale formats."""
    if type(value) is int:
        return f"{value:,}"
    return intcomma(value)


def _slugify(value) -> str:
    """Django's slugify filter (it takes any value as text), remembered for short words."""
    return css_name(str(value))


def environment(**options) -> Environment:
    """The "jinja2" engine's environment (settings.TEMPLATES): the filters the rows use, named
    as the Django filters they replace."""
    # Undefined whatever DEBUG says (Django's backend picks DebugUndefined under DEBUG): a missing
    # value is written as nothing, as a Django template writes it, in development too.
    options["undefined"] = Undefined
    options["autoescape"] = False  # _escaped_as_django_does escapes every value written
    env = Environment(**options, finalize=_escaped_as_django_does)
    env.filters.update({f.__name__: f for f in formatting.FILTERS})
    env.filters.update(intcomma=_intcomma, slugify=_slugify)
    env.globals.update(timestamp=formatting.timestamp)
    return env


def rows_html(template: str, **context) -> SafeString:
    """A .jinja template's rows, ready for a Django template's {{ }}."""
    return mark_safe(engines["jinja2"].get_template(template).render(context))
