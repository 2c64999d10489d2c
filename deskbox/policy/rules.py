"""Which actions may run: ``interface:action`` against the policy's allow and deny
patterns. Deny wins over allow, so one deny line closes a door whatever else is open."""

from __future__ import annotations

from fnmatch import fnmatchcase

from ..common.errors import DeniedError
from .config import ActionsConfig

__all__ = ["ActionRules"]


class ActionRules:
    def __init__(self, config: ActionsConfig) -> None:
        self.config = config
        # Compared in lower case: interfaces and actions are lower-case names, patterns may not be.
        self._deny = [p.lower() for p in config.deny]
        self._allow = [p.lower() for p in config.allow]

    def rule_for(self, interface: str, action: str) -> tuple[str, str]:
        """The decision and the rule that made it: ``("deny", "*:drag")``,
        ``("allow", "mcp:*")`` or ``("deny", "default")``."""
        name = f"{interface}:{action}".lower()
        for pattern in self._deny:
            if fnmatchcase(name, pattern):
                return "deny", pattern
        for pattern in self._allow:
            if fnmatchcase(name, pattern):
                return "allow", pattern
        return self.config.default, "default"

    def allowed(self, interface: str, action: str) -> bool:
        return self.rule_for(interface, action)[0] == "allow"

    def check(self, interface: str, action: str) -> None:
        """Raise DeniedError when the policy does not allow ``action`` on ``interface``."""
        decision, rule = self.rule_for(interface, action)
        if decision == "allow":
            return
        why = "no allow rule names it and the default is deny" if rule == "default" else f"deny rule {rule!r}"
        raise DeniedError(f"{interface}:{action} is not allowed by the session's policy ({why})",
                          context={"interface": interface, "action": action, "rule": rule})
