"""Remote Config templates as the REST reference (RemoteConfig, RemoteConfigParameter,
RemoteConfigParameterValue, Version) and the quotas page describe them: what the fake Google
backend accepts on a publish, and what a device's fetch gets from a client template.
"""
import json, re

from google_errors import invalid, kind, unknown_field

VALUE_TYPES = {"STRING", "BOOLEAN", "NUMBER", "JSON"}
TAG_COLORS = {"BLUE", "BROWN", "CYAN", "DEEP_ORANGE", "GREEN", "INDIGO", "LIME", "ORANGE", "PINK", "PURPLE", "TEAL",
              "CONDITION_DISPLAY_COLOR_UNSPECIFIED"}
# Keys start with a letter or an underscore and hold letters, digits and underscores (<= 256).
PARAMETER_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_value(value, where, value_type):
    """One RemoteConfigParameterValue: exactly one of value, useInAppDefault, rolloutValue,
    personalizationValue. A static value must read as its parameter's valueType."""
    if not isinstance(value, dict):
        raise invalid("[VALIDATION_ERROR]: %s must be an object, got %s" % (where, kind(value)))
    for name in value:
        if name not in ("value", "useInAppDefault", "rolloutValue", "personalizationValue"):
            raise unknown_field(name, where)
    if len(value) != 1:
        raise invalid("[VALIDATION_ERROR]: %s must have exactly one of value, useInAppDefault, rolloutValue, "
                      "personalizationValue; it has %s" % (where, ", ".join(sorted(value)) or "none"))
    # The value types a publish may carry; each returns how many characters it adds to the
    # template's total (the quotas page caps all values together at 1,000,000).
    if "value" in value:
        text = value["value"]
        if not isinstance(text, str):
            raise invalid("[VALIDATION_ERROR]: %s.value must be a string, got %s" % (where, kind(text)))
        check_typed(text, where + ".value", value_type)
        return len(text)
    if "useInAppDefault" in value:
        # "If true, the parameter is omitted from the parameter values returned to a client."
        if value["useInAppDefault"] is not True:
            raise invalid("[VALIDATION_ERROR]: %s.useInAppDefault must be true" % where)
        return 0
    if "rolloutValue" in value:
        # Managed by a rollout: kept as published, its value still typed like the parameter.
        rollout = value["rolloutValue"]
        if not isinstance(rollout, dict):
            raise invalid("[VALIDATION_ERROR]: %s.rolloutValue must be an object" % where)
        for name in rollout:
            if name not in ("rolloutId", "value", "percent"):
                raise unknown_field(name, where + ".rolloutValue")
        if not isinstance(rollout.get("rolloutId"), str) or not rollout["rolloutId"]:
            raise invalid("[VALIDATION_ERROR]: %s.rolloutValue.rolloutId must be a non-empty string" % where)
        if not isinstance(rollout.get("value"), str):
            raise invalid("[VALIDATION_ERROR]: %s.rolloutValue.value must be a string" % where)
        percent = rollout.get("percent", 0)
        if kind(percent) != "number" or not 0 <= percent <= 100:
            raise invalid("[VALIDATION_ERROR]: %s.rolloutValue.percent must be a number 0-100" % where)
        check_typed(rollout["value"], where + ".rolloutValue.value", value_type)
        return len(rollout["value"])
    personalization = value["personalizationValue"]
    if not isinstance(personalization, dict) or not isinstance(personalization.get("personalizationId"), str):
        raise invalid("[VALIDATION_ERROR]: %s.personalizationValue must be an object with a personalizationId"
                      % where)
    return 0


def check_typed(text, where, value_type):
    """Every value travels as a string; valueType says how the client reads it, and a publish
    whose value cannot be read that way is refused rather than shipped to devices."""
    if value_type == "NUMBER":
        try:
            float(text)
        except ValueError:
            raise invalid("[VALIDATION_ERROR]: %s %r is not a number (valueType NUMBER)" % (where, text))
    elif value_type == "BOOLEAN" and text not in ("true", "false"):
        raise invalid("[VALIDATION_ERROR]: %s %r is not true or false (valueType BOOLEAN)" % (where, text))
    elif value_type == "JSON":
        try:
            json.loads(text)
        except ValueError:
            raise invalid("[VALIDATION_ERROR]: %s is not valid JSON (valueType JSON)" % where)


def check_parameters(parameters, where, conditions, seen):
    """One parameters map (the top level's or a group's). `seen`: key -> where it was first
    defined, shared by the whole template, since keys are unique across groups too. Returns the
    characters its values hold."""
    if not isinstance(parameters, dict):
        raise invalid("[VALIDATION_ERROR]: %s must be an object, got %s" % (where, kind(parameters)))
    size = 0
    for key, parameter in parameters.items():
        here = "%s.%s" % (where, key)
        if not PARAMETER_KEY.match(key) or len(key) > 256:
            raise invalid("[VALIDATION_ERROR]: parameter key %r must start with a letter or _, hold only letters, "
                          "digits and _, and be at most 256 characters" % key)
        if key in seen:
            raise invalid("[VALIDATION_ERROR]: parameter key %r is used more than once (%s and %s): keys must be "
                          "unique across the template and its parameter groups" % (key, seen[key], here))
        seen[key] = here
        if not isinstance(parameter, dict):
            raise invalid("[VALIDATION_ERROR]: %s must be an object, got %s" % (here, kind(parameter)))
        for name in parameter:
            if name not in ("defaultValue", "conditionalValues", "description", "valueType"):
                raise unknown_field(name, here)
        value_type = parameter.get("valueType", "STRING")
        if value_type not in VALUE_TYPES:
            raise invalid("[VALIDATION_ERROR]: %s.valueType %r is not one of %s"
                          % (here, value_type, ", ".join(sorted(VALUE_TYPES))))
        if "description" in parameter and not isinstance(parameter["description"], str):
            raise invalid("[VALIDATION_ERROR]: %s.description must be a string" % here)
        if "defaultValue" in parameter:
            size += check_value(parameter["defaultValue"], here + ".defaultValue", value_type)
        conditional = parameter.get("conditionalValues", {})
        if not isinstance(conditional, dict):
            raise invalid("[VALIDATION_ERROR]: %s.conditionalValues must be an object" % here)
        for name, value in conditional.items():
            if name not in conditions:
                raise invalid("[VALIDATION_ERROR]: %s.conditionalValues names condition %r, which the template's "
                              "conditions do not define" % (here, name))
            size += check_value(value, "%s.conditionalValues.%s" % (here, name), value_type)
    return size


def check_template(template, where="template"):
    """Validates a template as the REST reference and quotas page describe it; returns it as it
    is stored (without version) and the input version description (or None)."""
    if not isinstance(template, dict):
        raise invalid("[VALIDATION_ERROR]: the %s must be a JSON object" % where)
    for name in template:
        if name not in ("conditions", "parameters", "parameterGroups", "version"):
            raise unknown_field(name, where)
    conditions = template.get("conditions", [])
    if not isinstance(conditions, list):
        raise invalid("[VALIDATION_ERROR]: conditions must be an array, got %s" % kind(conditions))
    if len(conditions) > 2000:
        raise invalid("[VALIDATION_ERROR]: %d conditions, at most 2000 allowed" % len(conditions))
    names = set()
    for index, condition in enumerate(conditions):
        here = "conditions[%d]" % index
        if not isinstance(condition, dict):
            raise invalid("[VALIDATION_ERROR]: %s must be an object" % here)
        for name in condition:
            if name not in ("name", "expression", "tagColor"):
                raise unknown_field(name, here)
        name = condition.get("name")
        if not isinstance(name, str) or not name:
            raise invalid("[VALIDATION_ERROR]: %s.name must be a non-empty string" % here)
        if name in names:
            raise invalid("[VALIDATION_ERROR]: condition name %r is used more than once" % name)
        names.add(name)
        if not isinstance(condition.get("expression"), str) or not condition["expression"]:
            raise invalid("[VALIDATION_ERROR]: %s.expression must be a non-empty string" % here)
        if "tagColor" in condition and condition["tagColor"] not in TAG_COLORS:
            raise invalid("[VALIDATION_ERROR]: %s.tagColor %r is not a known color" % (here, condition["tagColor"]))
    seen = {}
    size = check_parameters(template.get("parameters", {}), "parameters", names, seen)
    groups = template.get("parameterGroups", {})
    if not isinstance(groups, dict):
        raise invalid("[VALIDATION_ERROR]: parameterGroups must be an object, got %s" % kind(groups))
    for group_name, group in groups.items():
        here = "parameterGroups.%s" % group_name
        if not group_name or len(group_name) > 256:
            raise invalid("[VALIDATION_ERROR]: parameter group names must be 1-256 characters: %r" % group_name)
        if not isinstance(group, dict):
            raise invalid("[VALIDATION_ERROR]: %s must be an object" % here)
        for name in group:
            if name not in ("description", "parameters"):
                raise unknown_field(name, here)
        if "description" in group and not isinstance(group["description"], str):
            raise invalid("[VALIDATION_ERROR]: %s.description must be a string" % here)
        size += check_parameters(group.get("parameters", {}), here + ".parameters", names, seen)
    if len(seen) > 3000:
        raise invalid("[VALIDATION_ERROR]: %d parameters, at most 3000 allowed" % len(seen))
    if size > 1000000:
        raise invalid("[VALIDATION_ERROR]: the values hold %d characters, at most 1000000 allowed" % size)
    description = None
    if "version" in template:
        version = template["version"]
        if not isinstance(version, dict):
            raise invalid("[VALIDATION_ERROR]: version must be an object")
        for name in version:
            if name != "description":
                raise invalid("[VALIDATION_ERROR]: version.%s is output only: a published template's version "
                              "may only carry a description" % name)
        description = version.get("description")
        if description is not None and (not isinstance(description, str) or len(description) > 1024):
            raise invalid("[VALIDATION_ERROR]: version.description must be a string of at most 1024 characters")
    stored = {}
    for name in ("conditions", "parameters", "parameterGroups"):
        if template.get(name):
            stored[name] = template[name]
    return stored, description


def client_entries(template):
    """What a device's fetch gets from a client template: every parameter (top level and groups)
    with a static default value. Conditional values are not evaluated (the fake has no context
    to evaluate them in); useInAppDefault and managed values are left out."""
    entries = {}
    parameters = dict(template.get("parameters", {}))
    for group in template.get("parameterGroups", {}).values():
        parameters.update(group.get("parameters", {}))
    for key, parameter in parameters.items():
        default = parameter.get("defaultValue", {})
        if isinstance(default.get("value"), str):
            entries[key] = default["value"]
    return entries
