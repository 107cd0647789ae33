"""Every console the CLI builds prints user text as written: Rich's emoji codes (`:x:`) off (issue 62)."""

import ast
from pathlib import Path

CLI = Path(__file__).parents[3] / "platform" / "nerplat" / "cli"


def _consoles_with_emoji() -> list[str]:
    found = []
    for module in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Console":
                off = any(k.arg == "emoji" and isinstance(k.value, ast.Constant) and k.value.value is False
                          for k in node.keywords)
                if not off:
                    found.append(f"{module.name}:{node.lineno}")
    return found


def test_every_cli_console_turns_emoji_codes_off():
    assert _consoles_with_emoji() == []
