"""What every ``tensorsched`` subcommand shares: argument types checked by
argparse before any work starts (a bad value is one line and exit status 2,
naming the flag), every default shown in ``--help``, the manifest loading
with its ignored-kinds warning, and a progress bar that stays quiet when
stderr is not a terminal.

Parsing imports nothing heavy (``--help`` and ``--version`` answer at
once); what loads manifests or draws is imported by the helper using it."""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings

from tensorsched.experiments import DEFAULT_INTERVAL
from tensorsched.framework.errors import TensorschedError
from tensorsched.kernels.backend_names import BACKENDS

__all__ = ["BACKENDS", "DEFAULT_INTERVAL", "SEED", "Help", "Parser", "add_feature_gates",
           "existing_path", "feature_gates", "int_in",
           "load", "load_cluster", "nonnegative_float", "output_file", "positive_float",
           "progress", "require_plotting", "simulated_until", "subcommand"]


def int_in(lo: int, hi: int | None = None):
    """An argparse type: an integer in lo..hi (hi None: no upper bound)."""
    def check(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(
                f"must be {lo}..{hi}, got {v}" if hi is not None else f"must be >= {lo}, got {v}")
        return v
    check.__name__ = "integer"
    return check


SEED = int_in(0, (1 << 63) - 1)


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return v


#: The latest simulated second a flag may name: the traces' and scenarios'
#: bound (``framework.simulation.trace.MAX_SECONDS``; not imported: the
#: parser stays cheap).
MAX_SECONDS = 1e15


def simulated_until(text: str) -> float:
    """An argparse type: a simulated second in (0, 1e15], the bound of
    every time in a trace or scenario."""
    v = positive_float(text)
    if v > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SECONDS:g} seconds (the "
                                         f"traces' bound), got {text!r}")
    return v


def nonnegative_float(text: str) -> float:
    """An argparse type: a finite number >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return v


def output_file(text: str) -> str:
    """An argparse type: a file to write; its directory must exist and be
    writable now."""
    folder = os.path.dirname(os.path.abspath(text))
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a directory")
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"directory {folder!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"directory {folder!r} is not writable")
    return text


def existing_path(text: str) -> str:
    """An argparse type: a file or directory that exists now."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r} does not exist")
    return text


_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def feature_gates(text: str) -> dict[str, bool]:
    """An argparse type: kube-scheduler's ``--feature-gates``, a
    comma-separated list of ``Name=bool`` (true/false, 1/0, t/f as Go's
    ParseBool), each a gate tensorsched knows (``plugin_args.FEATURE_GATES``)
    given once."""
    from tensorsched.framework.config.plugin_args import FEATURE_GATES
    out: dict[str, bool] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        name, sep, value = (x.strip() for x in item.partition("="))
        if not sep:
            raise argparse.ArgumentTypeError(f"missing bool value for {name!r} "
                                             "(Name=true or Name=false)")
        if name not in FEATURE_GATES:
            raise argparse.ArgumentTypeError(f"unrecognized feature gate: {name} "
                                             f"(known: {', '.join(sorted(FEATURE_GATES))})")
        if value not in _TRUE + _FALSE:
            raise argparse.ArgumentTypeError(f"{name}={value}: the value must be true "
                                             "or false")
        if name in out:
            raise argparse.ArgumentTypeError(f"feature gate {name} is given twice")
        out[name] = value in _TRUE
    return out


def add_feature_gates(parser) -> None:
    """The ``--feature-gates`` flag of a subcommand that builds a Scheduler."""
    parser.add_argument("--feature-gates", type=feature_gates, metavar="Name=bool,...",
                        help="feature gates over Kubernetes 1.35's defaults, as "
                        "kube-scheduler takes them (e.g. DRADeviceTaints=true,"
                        "DRAPartitionableDevices=true; the DRA gates and "
                        "StorageCapacityScoring)")


class _StoreOnce(argparse._StoreAction):
    """A single-valued flag that refuses to be given twice (argparse would
    keep the last value and drop the others without a word).  Flags that
    take several values say so with ``action="append"`` or ``"extend"``."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = getattr(parser, "_given", None)
        if seen is not None and option_string is not None:
            if self.dest in seen:
                raise argparse.ArgumentError(self, "given more than once; it takes one value "
                                             "(give it once)")
            seen.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line refusal (no usage dump): status 2; a
    single-valued flag given twice is refused, not silently overridden."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_known_args(self, args=None, namespace=None):
        self._given: set[str] = set()
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class Help(argparse.ArgumentDefaultsHelpFormatter):
    """Every flag's default in its help, where it has one."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or action.default == argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def subcommand(sub, name: str, help_text: str) -> argparse.ArgumentParser:
    """A subcommand parser with the shared help format."""
    return sub.add_parser(name, help=help_text, description=help_text, formatter_class=Help)


def progress(total, what: str, unit: str = "pod"):
    """A tqdm progress bar on stderr when it is a terminal (quiet when piped)."""
    from tqdm import tqdm
    return tqdm(total=total, desc=what, unit=unit, file=sys.stderr, disable=None, leave=False)


def load_cluster(objects, config, pods=(), feature_gates=None):
    """The cluster of ``objects``, after a warning line on stderr naming the
    kinds it read but ignores (Deployments, ConfigMaps, typos...), and one
    per blind spot of a profile for its pending pods and ``pods`` (dicts
    or records: templates, the pod to explain).  ``feature_gates``: the
    ``--feature-gates`` mapping (None: upstream's defaults)."""
    from tensorsched.framework.parsing.manifests import ignored_kinds_warning
    from tensorsched.framework.parsing.strict_fields import UnknownFieldWarning
    from tensorsched.framework.scheduler.cluster import build_cluster, pod_from
    from tensorsched.framework.scheduler.profile_warnings import asks_of_pods
    with warnings.catch_warnings():     # their lines are ignored_kinds_warning's
        warnings.simplefilter("ignore", UnknownFieldWarning)
        cluster = build_cluster(objects, config, feature_gates=feature_gates)
    warning = ignored_kinds_warning(cluster.objects)
    if warning:
        print(warning, file=sys.stderr)
    warn_profiles(cluster, asks_of_pods(list(cluster.pending) + [pod_from(p) for p in pods],
                                        cluster.registry.asks()))
    return cluster


def warn_profiles(cluster, asks) -> None:
    """Print a warning line on stderr for each thing a profile cannot see
    that the pods ask (``profile_warnings``)."""
    from tensorsched.framework.scheduler.profile_warnings import profile_warnings
    for line in profile_warnings(cluster, asks):
        print(line, file=sys.stderr)


def load(path):
    """The objects of a manifest file or directory."""
    from tensorsched.framework.parsing.manifests import load_objects
    return load_objects(path)


def require_plotting(command: str) -> None:
    """Refuse ``<command> --plot`` up front (one line) when matplotlib, the
    ``plot`` extra, is missing, before any work is done."""
    from tensorsched.topology.openb.replay import pyplot
    try:
        pyplot()
    except ImportError as exc:
        raise TensorschedError(f"{command} --plot: {exc}") from exc
