"""How bench/run.py and bench/table.py show a figure's value."""


def show(value, unit):
    """`value` with about three significant digits, then `unit`; "n/a" for a figure not measured."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        text = f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}" if abs(value) < 100 else f"{value:,.0f}"
    else:
        text = f"{value:,}"
    return f"{text} {unit}".strip()
