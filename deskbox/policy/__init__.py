"""A session's guard rails, as pure logic the services call before and after each action.

- ``Policy`` / ``load_policy``: the policy file (JSON or YAML), with CLI overrides.
- ``Budgets``: how many actions, screenshots and model tokens, for how long, how fast (429
  when spent).
- ``ActionRules``: which ``interface:action`` may run at all (403 when denied).
- ``Confirmations``: actions that run only when asked twice, with a single-use token (409).
- ``Redactor``: secrets out of scenes, text, action arguments and screenshots.
- ``AuditLog``: one redacted JSON line per action, rotated by size, readable by its owner only.
"""

from .audit import AuditLog
from .budgets import Budgets
from .config import Policy, load_policy
from .confirm import Confirmations
from .redact import Redactor
from .rules import ActionRules

__all__ = ["Policy", "load_policy", "Budgets", "Redactor", "ActionRules", "Confirmations", "AuditLog"]
