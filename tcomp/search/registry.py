"""An ordered registry of rules by name, one for the tiling rules and one for the fusion
rules (``tiling/base.py``, ``fusion/base.py``)."""

from __future__ import annotations


class RuleRegistry:
    """Rules in the order they were registered, each name once."""

    def __init__(self, kind: str, reserved: tuple = ()):
        self.kind = kind  # "rule", "fusion rule": how messages name one
        self.reserved = reserved  # names no rule may take
        self._rules: list = []

    def add(self, rule):
        """Append ``rule``; a ValueError if its name is taken. Returns ``rule``."""
        if rule.name in self.reserved or any(r.name == rule.name for r in self._rules):
            raise ValueError(f"a {self.kind} named {rule.name!r} is registered already")
        self._rules.append(rule)
        return rule

    def remove(self, rule) -> None:
        self._rules.remove(rule)

    def rules(self) -> list:
        """A copy of the rules, in registration order."""
        return list(self._rules)


__all__ = ["RuleRegistry"]
