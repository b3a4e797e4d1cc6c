"""Scalar oracle for the GPU-sharing rules, written from the definitions in
Weng et al. (ATC'23) for clarity: plain lists, one node at a time."""

MILLI = 1000


def accessible(node_model, allowed):
    return not allowed or node_model in allowed


def fits(node, pod):
    """node: dict(left=[...], model=str|None, cpu=int); pod: dict(cpu, num, milli, models)."""
    if node["cpu"] < pod["cpu"]:
        return False
    if pod["milli"] == 0:
        return True
    if not node["left"] or not accessible(node["model"], pod["models"]):
        return False
    return sum(1 for x in node["left"] if x >= pod["milli"]) >= pod["num"]


def frag(node, typical):
    """Expected fragmented GPU milli; typical = [(pod, freq)]."""
    total = sum(node["left"])
    out = 0.0
    for pod, freq in typical:
        if pod["milli"] == 0 or not accessible(node["model"], pod["models"]):
            out += freq * total
        elif fits(node, pod):
            out += freq * sum(x for x in node["left"] if x < pod["milli"])
        else:
            out += freq * total
    return out if total else 0.0


def best_fit_gpu(left, milli):
    """A share goes to the GPU with the least free milli that fits (lowest index on ties)."""
    cands = [(x, g) for g, x in enumerate(left) if x >= milli]
    return min(cands)[1] if cands else None


def first_free(left, num):
    free = [g for g, x in enumerate(left) if x == MILLI]
    return free[:num] if len(free) >= num else None
