"""A NodeSelector as the API server validates it (``ValidateNodeSelector``
and ``ValidateNodeSelectorTerm``): a pod's required node affinity, a
ResourceSlice's or a device's node selector, an allocation's."""

from __future__ import annotations

from .meta import (
    ObjectContext,
    dns1123_subdomain_errors,
    invalid_value,
    label_value_errors,
    qualified_name_errors,
)

__all__ = ["NODE_SELECTOR_OPERATORS", "check_node_selector", "check_node_selector_term"]

NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def check_node_selector(ctx: ObjectContext, selector: dict, path: str,
                        label_values: bool = False) -> list:
    """``selector`` (a mapping) with at least one term, each term checked;
    its terms.  ``label_values``: an expression's values must be label
    values (the DRA kinds' selectors: upstream validates those without
    the leniency a pod's required node affinity may have)."""
    terms_path = f"{path}.nodeSelectorTerms"
    terms = ctx.list(selector.get("nodeSelectorTerms"), terms_path)
    if not terms:
        ctx.fail(terms_path, "Required value: must have at least one node selector term")
    for i, term in enumerate(terms):
        check_node_selector_term(ctx, term, f"{terms_path}[{i}]", label_values)
    return terms


def _requirements(ctx: ObjectContext, value, path: str, fields: bool,
                  label_values: bool = False) -> None:
    """A term's matchExpressions (``fields`` False) or matchFields, as the
    API server validates a pod's: an expression's key a qualified name, In /
    NotIn with values, Exists / DoesNotExist without, Gt / Lt with one (the
    values themselves are not checked unless ``label_values``:
    kube-scheduler's matching reads a bad one as matching no node); a field
    requirement on metadata.name, In or NotIn with one value, a node name."""
    for i, req in enumerate(ctx.list(value, path)):
        rpath = f"{path}[{i}]"
        req = ctx.mapping(req, rpath)
        key = ctx.string(req.get("key"), f"{rpath}.key", required=True)
        if req.get("operator") is None:
            ctx.fail(f"{rpath}.operator", "required (" + ", ".join(NODE_SELECTOR_OPERATORS) + ")")
        op = ctx.enum(req.get("operator"), f"{rpath}.operator", NODE_SELECTOR_OPERATORS)
        values = ctx.str_list(req.get("values"), f"{rpath}.values")
        if fields:
            if op not in ("In", "NotIn"):
                ctx.fail(f"{rpath}.operator", invalid_value(op, ["not a valid selector operator"]))
            if len(values) != 1:
                ctx.fail(f"{rpath}.values", "Required value: must be only one value when "
                         "`operator` is 'In' or 'NotIn' for node field selector")
            if key != "metadata.name":
                ctx.fail(f"{rpath}.key", invalid_value(key, ["not a valid field selector key"]))
            errs = dns1123_subdomain_errors(values[0])
            if errs:
                ctx.fail(f"{rpath}.values[0]", invalid_value(values[0], errs))
            continue
        if op in ("In", "NotIn") and not values:
            ctx.fail(f"{rpath}.values", "Required value: must be specified when `operator` is "
                     "'In' or 'NotIn'")
        if op in ("Exists", "DoesNotExist") and values:
            ctx.fail(f"{rpath}.values", "Forbidden: may not be specified when `operator` is "
                     "'Exists' or 'DoesNotExist'")
        if op in ("Gt", "Lt") and len(values) != 1:
            ctx.fail(f"{rpath}.values", "Required value: must be specified single value when "
                     "`operator` is 'Lt' or 'Gt'")
        errs = qualified_name_errors(key)
        if errs:
            ctx.fail(f"{rpath}.key", invalid_value(key, errs))
        if label_values:
            for k, v in enumerate(values):
                errs = label_value_errors(v)
                if errs:
                    ctx.fail(f"{rpath}.values[{k}]", invalid_value(v, errs))


def check_node_selector_term(ctx: ObjectContext, term, path: str,
                             label_values: bool = False) -> None:
    """One NodeSelectorTerm (a mapping or None): its expressions and fields."""
    term = ctx.mapping(term, path)
    _requirements(ctx, term.get("matchExpressions"), f"{path}.matchExpressions", False,
                  label_values)
    _requirements(ctx, term.get("matchFields"), f"{path}.matchFields", True)
