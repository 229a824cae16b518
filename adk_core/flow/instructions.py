"""Instruction templating: ``{var}`` from state, ``{var?}`` optional, ``{artifact.name}`` from artifacts."""

from __future__ import annotations

import re

from ..agents.context import ReadonlyContext
from ..errors import ConfigurationError
from ..state import APP_PREFIX, TEMP_PREFIX, USER_PREFIX

_PLACEHOLDER = re.compile(r"{+[^{}]*}+")
_PREFIXES = (APP_PREFIX, USER_PREFIX, TEMP_PREFIX)


def _is_state_name(name: str) -> bool:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.isidentifier()


async def inject_state(template: str, ctx: ReadonlyContext, *, agent_name: str) -> str:
    """Fill placeholders in ``template``. Anything that is not a valid name is left as written, so
    JSON examples in instructions survive."""
    if "{" not in template:
        return template
    parts: list[str] = []
    last = 0
    for match in _PLACEHOLDER.finditer(template):
        parts.append(template[last : match.start()])
        parts.append(await _replace(match.group(), ctx, agent_name))
        last = match.end()
    parts.append(template[last:])
    return "".join(parts)


async def _replace(placeholder: str, ctx: ReadonlyContext, agent_name: str) -> str:
    name = placeholder.lstrip("{").rstrip("}").strip()
    optional = name.endswith("?")
    if optional:
        name = name[:-1]
    if name.startswith("artifact."):
        filename = name[len("artifact.") :]
        service = ctx.invocation_context.artifact_service
        artifact = None
        if service is not None:
            artifact = await service.load_artifact(
                app_name=ctx.app_name, user_id=ctx.user_id, session_id=ctx.session_id, filename=filename
            )
        if artifact is None:
            if optional:
                return ""
            raise ConfigurationError(
                f"instruction of agent {agent_name!r} uses {{artifact.{filename}}} but no artifact "
                f"{filename!r} exists; save it first or write {{artifact.{filename}?}} to make it optional"
            )
        return artifact.text or ""
    if not _is_state_name(name):
        return placeholder
    state = ctx.state
    if name in state:
        value = state[name]
        return "" if value is None else str(value)
    if optional:
        return ""
    raise ConfigurationError(
        f"instruction of agent {agent_name!r} uses {{{name}}} but the session state has no {name!r}; "
        f"set it (create_session(state=...), a tool, or a callback) or write {{{name}?}} to make it optional"
    )
