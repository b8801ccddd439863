"""The tool result model a served row's Struct makes: the reference tools/models.py is held to.

The Struct (reports/) is where a served row's field names, types and SPEC 2 notes are written:
the OpenAPI description is made from it. A tool result that shows the same row (or part of
it) declares those fields again in tools/models.py, so the type checker sees them;
`derived` builds, from the Struct, the pydantic model that declaration should amount to,
field by field in the order asked, each with the Struct's type and description, and
tests/tools/test_models.py compares the two schema for schema. A nested row becomes the
tool model given for its Struct in `refs`. Fields only the tool has are passed in as they
are, in place.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import msgspec
from litestar.params import KwargDefinition
from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo

# A field only the tool has: its name, its type and its pydantic Field (for the description).
Own = tuple[str, Any, FieldInfo]


def derived(
    name: str,
    struct: type[msgspec.Struct],
    *fields: str | Own,
    base: type[BaseModel],
    refs: Mapping[type[msgspec.Struct], type[BaseModel]] | None = None,
    doc: str | None = None,
) -> type[BaseModel]:
    """A model named `name` whose fields are `fields`: a name picks the Struct's field (its
    type and description), an `Own` declares one the Struct has not. No `fields`: all of the
    Struct's, in its order. `doc` describes the model; without it, a model of all the
    Struct's fields takes the Struct's docstring, and one of some of them has none."""
    refs = refs or {}
    plain = get_type_hints(struct)
    annotated = get_type_hints(struct, include_extras=True)
    renamed = {f.name for f in msgspec.structs.fields(struct) if f.encode_name != f.name}
    definitions: dict[str, Any] = {}
    for field in fields or struct.__struct_fields__:
        if isinstance(field, tuple):
            own_name, annotation, info = field
            definitions[own_name] = (annotation, info)
            continue
        if field not in plain:
            raise TypeError(f"{struct.__name__} has no field {field!r}")
        if field in renamed:  # served under another name: the model would need an alias
            raise TypeError(f"{struct.__name__}.{field} is renamed on the wire; declare it")
        description = _description(annotated[field])
        definitions[field] = (
            _tool_type(plain[field], refs),
            FieldInfo(description=description) if description else FieldInfo(),
        )
    return create_model(
        name,
        __base__=base,
        __doc__=doc if doc is not None or fields else struct.__doc__,
        __module__=base.__module__,
        **definitions,
    )


def _description(hint: Any) -> str | None:
    """The field's note (api.common.note): the last description on its own annotation."""
    if get_origin(hint) is not Annotated:
        return None
    notes = [m.description for m in hint.__metadata__ if isinstance(m, KwargDefinition)]
    return next((text for text in reversed(notes) if text), None)


def _tool_type(hint: Any, refs: Mapping[type[msgspec.Struct], type[BaseModel]]) -> Any:
    """`hint` with every nested Struct replaced by its tool model."""
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        if hint not in refs:
            raise TypeError(f"no tool model is given for {hint.__name__}")
        return refs[hint]
    origin = get_origin(hint)
    if origin is Literal or origin is None:
        return hint
    args = tuple(_tool_type(arg, refs) for arg in get_args(hint))
    if origin in (Union, types.UnionType):
        return Union[args]  # noqa: UP007 (the arguments are values here)
    if origin is list:
        (item,) = args
        return list[item]  # type: ignore[valid-type]
    raise TypeError(f"no tool type for {hint!r}")
