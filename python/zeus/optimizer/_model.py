"""A small standard-library stand-in for the pydantic models of the original
Zeus package (JobSpec, the power-limit optimizer's states, ...).

Scripts written against the original call pydantic's methods on these
objects; this base offers them without depending on pydantic:

    v1 names: copy(update=...), dict(), json(), parse_obj(), parse_raw()
    v2 names: model_copy(update=...), model_dump(), model_dump_json(),
              model_validate(), model_validate_json()

Fields are declared as class annotations with typing types (int, float,
bool, str, Optional[...], List[...], a Model subclass) and a default value
or a Field(...) carrying constraints. Every construction, copy and parse
validates: a wrong type, a value outside its gt/ge/lt/le bounds, NaN or
infinity in a float, or a control character in a str field raises
ValidationError (a zeus InvalidArgumentError and a ValueError) naming the
model, the field and the value. As with pydantic, integral floats are
accepted for int fields and ints for float fields, and keys a model does not
know are ignored (logged at debug level), so answers from a newer server
parse. Assignment to an attribute is not validated (pydantic's default);
the next copy or dump validates. Not thread-safe (plain objects).
"""

import copy as _copy
import json as _json
import logging
import math
import typing

from zeus.exception import InvalidArgumentError

logger = logging.getLogger(__name__)

_MISSING = object()


class ValidationError(InvalidArgumentError):
    """A model field got a value it does not accept. Also a ValueError, like
    pydantic's ValidationError."""


class Field:
    """A field's default and constraints (the subset of pydantic's Field the
    Zeus models use).

    Args:
        default: The default value; omitted: the field is required.
        gt, ge, lt, le: Bounds on a number.
        allow_control: Whether a str may hold control characters (default
            False: names and ids never need them, and they break logs and
            dashboards).
        description: Documentation only.
    """

    def __init__(self, default=_MISSING, *, gt=None, ge=None, lt=None, le=None,
                 allow_control=False, description=None):
        self.default = default
        self.gt, self.ge, self.lt, self.le = gt, ge, lt, le
        self.allow_control = allow_control
        self.description = description


def _type_name(tp):
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


class _Checker:
    """Validates and converts one field's values."""

    def __init__(self, model, name, tp, spec):
        self.model, self.name, self.tp, self.spec = model, name, tp, spec

    def fail(self, value, what):
        raise ValidationError(f"{self.model}: field {self.name!r}: {value!r} {what}")

    def check(self, value, tp=None):
        tp = self.tp if tp is None else tp
        origin = typing.get_origin(tp)
        if origin is typing.Union:
            args = typing.get_args(tp)
            if value is None and type(None) in args:
                return None
            rest = [a for a in args if a is not type(None)]
            if len(rest) == 1:
                return self.check(value, rest[0])
            for option in rest:
                try:
                    return self.check(value, option)
                except ValidationError:
                    continue
            self.fail(value, f"is not a {_type_name(tp)}")
        if origin in (list, typing.List):
            (item,) = typing.get_args(tp) or (typing.Any,)
            if not isinstance(value, (list, tuple)):
                self.fail(value, "is not a list")
            return [self.check(v, item) for v in value]
        if tp is typing.Any:
            return value
        if value is None:
            self.fail(value, f"must be a {_type_name(tp)}, not None")
        if isinstance(tp, type) and issubclass(tp, Model):
            if isinstance(value, tp):
                return value.copy()
            if isinstance(value, dict):
                return tp.parse_obj(value)
            self.fail(value, f"is not a {tp.__name__}")
        if tp is bool:
            if not isinstance(value, bool):
                self.fail(value, "is not a bool (True or False)")
            return value
        if tp is int:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.fail(value, "is not an int")
            if isinstance(value, float):
                if not (math.isfinite(value) and value.is_integer()):
                    self.fail(value, "is not an int")
                value = int(value)
            return self.bounds(value)
        if tp is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.fail(value, "is not a number")
            value = float(value)
            if not math.isfinite(value):
                self.fail(value, "must be a finite number")
            return self.bounds(value)
        if tp is str:
            if not isinstance(value, str):
                self.fail(value, "is not a str")
            if not self.spec.allow_control:
                bad = next((c for c in value if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0), None)
                if bad is not None:
                    self.fail(value, f"holds the control character {bad!r}")
            return value
        if isinstance(tp, type):
            if not isinstance(value, tp):
                self.fail(value, f"is not a {tp.__name__}")
            return value
        return value

    def bounds(self, value):
        s = self.spec
        if s.gt is not None and not value > s.gt:
            self.fail(value, f"must be > {s.gt}")
        if s.ge is not None and not value >= s.ge:
            self.fail(value, f"must be >= {s.ge}")
        if s.lt is not None and not value < s.lt:
            self.fail(value, f"must be < {s.lt}")
        if s.le is not None and not value <= s.le:
            self.fail(value, f"must be <= {s.le}")
        return value


class Model:
    """Base of the pydantic-style models. Subclasses declare fields as
    annotations and may override _validate_model(self) for checks across
    fields (raise ValidationError through self._invalid)."""

    @classmethod
    def _fields(cls):
        cache = cls.__dict__.get("_Model__fields_cache")
        if cache is not None:
            return cache
        hints = {}
        for klass in reversed(cls.__mro__):
            if klass in (Model, object) or not issubclass(klass, Model):
                continue
            own = klass.__dict__.get("__annotations__", {})
            resolved = typing.get_type_hints(klass)
            for name in own:
                if name.startswith("_") or typing.get_origin(resolved[name]) is typing.ClassVar:
                    continue
                hints[name] = resolved[name]  # A redeclaration keeps the field's place.
        fields = {}
        for name, tp in hints.items():
            default = _MISSING
            for klass in cls.__mro__:
                if name in klass.__dict__:
                    default = klass.__dict__[name]
                    break
            spec = default if isinstance(default, Field) else Field(default)
            if spec.default is _MISSING and typing.get_origin(tp) is typing.Union and \
                    type(None) in typing.get_args(tp):
                spec = _copy.copy(spec)
                spec.default = None  # pydantic v1: Optional fields default to None.
            fields[name] = (tp, spec)
        setattr(cls, "_Model__fields_cache", fields)
        return fields

    def __init__(self, **data):
        cls = type(self)
        values = {}
        for name, (tp, spec) in cls._fields().items():
            checker = _Checker(cls.__name__, name, tp, spec)
            if name in data:
                values[name] = checker.check(data[name])
            elif spec.default is _MISSING:
                raise ValidationError(f"{cls.__name__}: field {name!r} is required")
            else:
                values[name] = _copy.deepcopy(spec.default)
        unknown = sorted(set(data) - set(values))
        if unknown:
            logger.debug("%s: ignoring unknown fields %s", cls.__name__, unknown)
        self.__dict__.update(values)
        self._validate_model()

    def _validate_model(self):
        """Checks across fields; the default accepts everything."""

    def _invalid(self, what):
        raise ValidationError(f"{type(self).__name__}: {what}")

    @classmethod
    def model_construct(cls, **values):
        """A model from trusted values, without validation (pydantic's
        model_construct): fields not given take their defaults; a required
        field not given is refused (ValidationError)."""
        self = cls.__new__(cls)
        for name, (_, spec) in cls._fields().items():
            if name in values:
                self.__dict__[name] = values[name]
            elif spec.default is _MISSING:
                raise ValidationError(f"{cls.__name__}: field {name!r} is required")
            else:
                self.__dict__[name] = _copy.deepcopy(spec.default)
        return self

    # ---- pydantic v1 names ------------------------------------------------

    @classmethod
    def construct(cls, **values):
        """pydantic v1's name of model_construct."""
        return cls.model_construct(**values)

    @classmethod
    def parse_obj(cls, obj):
        """A model from a dict (or a model of this class, copied)."""
        if isinstance(obj, cls):
            return obj.copy()
        if isinstance(obj, Model):
            obj = obj.dict()
        if not isinstance(obj, dict):
            raise ValidationError(f"{cls.__name__}: expected a dict, got {obj!r}"[:300])
        return cls(**obj)

    @classmethod
    def parse_raw(cls, text, **_):
        """A model from JSON text (str or bytes)."""
        try:
            obj = _json.loads(text)
        except (TypeError, ValueError) as e:
            raise ValidationError(f"{cls.__name__}: not JSON: {e}") from None
        return cls.parse_obj(obj)

    @classmethod
    def parse_file(cls, path, **_):
        """A model from a JSON file."""
        with open(path, "rb") as f:
            return cls.parse_raw(f.read())

    def dict(self, *, include=None, exclude=None, exclude_none=False, **_):
        """The fields as a dict (nested models as dicts)."""
        out = {}
        for name in type(self)._fields():
            if (include is not None and name not in include) or \
                    (exclude is not None and name in exclude):
                continue
            value = _dump(getattr(self, name))
            if exclude_none and value is None:
                continue
            out[name] = value
        return out

    def json(self, *, include=None, exclude=None, exclude_none=False, indent=None, **_):
        """The fields as JSON text (NaN and infinity are refused, as JSON
        has no such numbers)."""
        data = type(self).parse_obj(self.dict()).dict(include=include, exclude=exclude,
                                                       exclude_none=exclude_none)
        return _json.dumps(data, indent=indent, allow_nan=False)

    def copy(self, *, update=None, deep=False, include=None, exclude=None):
        """A copy with `update`'s fields replaced; validated (unlike
        pydantic, so a bad update is caught here, not at the server)."""
        data = self.dict(include=include, exclude=exclude)
        if update:
            data.update(update)
        return type(self)(**data)

    @classmethod
    def schema(cls):
        """{field name: {"type", "default"?}} (a small subset of pydantic's
        JSON schema)."""
        out = {}
        for name, (tp, spec) in cls._fields().items():
            entry = {"type": _type_name(tp)}
            if spec.default is not _MISSING:
                entry["default"] = _dump(spec.default)
            out[name] = entry
        return out

    # ---- pydantic v2 names ------------------------------------------------

    @classmethod
    def model_validate(cls, obj, **_):
        return cls.parse_obj(obj)

    @classmethod
    def model_validate_json(cls, text, **_):
        return cls.parse_raw(text)

    def model_dump(self, *, include=None, exclude=None, exclude_none=False, mode="python", **_):
        return self.dict(include=include, exclude=exclude, exclude_none=exclude_none)

    def model_dump_json(self, *, include=None, exclude=None, exclude_none=False, indent=None,
                        **_):
        return self.json(include=include, exclude=exclude, exclude_none=exclude_none,
                         indent=indent)

    def model_copy(self, *, update=None, deep=False):
        return self.copy(update=update, deep=deep)

    @classmethod
    def _field_names(cls):
        return list(cls._fields())

    # ---- plain object protocol -------------------------------------------

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.dict() == other.dict()

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self.dict().items())
        return f"{type(self).__name__}({body})"

    def __iter__(self):
        """(name, value) pairs, like pydantic's dict(model)."""
        return iter(self.dict().items())


def _fields_property(cls):
    return {name: spec.default for name, (_, spec) in cls._fields().items()}


class _ClassProperty:
    def __init__(self, fn):
        self.fn = fn

    def __get__(self, _, owner):
        return self.fn(owner)


# `Model.__fields__` / `Model.model_fields`: {name: default}, for scripts that
# list a model's fields.
Model.__fields__ = _ClassProperty(_fields_property)
Model.model_fields = _ClassProperty(_fields_property)


def _dump(value):
    if isinstance(value, Model):
        return value.dict()
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


# The original's models derive from pydantic's BaseModel; the same name here.
BaseModel = Model
