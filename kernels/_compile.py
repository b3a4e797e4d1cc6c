"""Compile a module of scalar per-node rules (or any generated source) for one target.

The source is executed in a fresh namespace and each of its functions is
replaced by ``decorate(function, **options)`` before anything is compiled,
so calls between its functions resolve to compiled code of the same target
(Numba resolves globals lazily, at the first compilation).  The rule modules
are ``fused._core``, ``victims._core`` (on top of the fused rules) and
``gpu._core``; ``fused._numba`` and ``victims._numba`` generate their
``prange`` drivers the same way.

On-disk cache (``cache=True``, the njit targets): the source text is written
to ``<cache dir>/numba/<name>-<key>.py``, where the key hashes the source,
the decorator and its options, the keys of the compiled namespaces it calls
into (``depends``) and the Python, Numba and llvmlite versions; the text is
executed from there, registered in ``sys.modules`` (Numba's cache rebuilds a
function's environment by importing its module by name) and decorated with
``cache=True``, so Numba's own cache (its index is keyed by that file, the
function's bytecode and the CPU) keeps the machine code in the
``__pycache__`` next to it and a later process loads it instead of
compiling.  The cache dir is ``$TENSORSCHED_CACHE_DIR``, else
``$XDG_CACHE_HOME/tensorsched``, else ``~/.cache/tensorsched``.  Files are
written under a temporary name and moved into place (several processes may
start at once); when the directory cannot be written the source compiles in
memory as without a cache.  Numba's index does not see decorator options or
the functions a cached function calls: both are in the key here.  (With
``NUMBA_CACHE_DIR`` set Numba keeps the machine code there instead.)  Old
keys are never removed; deleting the directory is always safe between
runs.  The CUDA targets compile in memory (no ``cache``).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import re
import sys
import tempfile
import types
from collections.abc import Callable, Iterable

COMPILED = "__compiled_functions__"     # names a namespace's compiled functions
KEY = "__tensorsched_cache_key__"       # a namespace's cache key (None: compiled in memory)
CACHE_DIR_ENV = "TENSORSCHED_CACHE_DIR"


def module_functions(module) -> tuple[str, ...]:
    """Names of the functions ``module`` defines itself."""
    return tuple(name for name, obj in vars(module).items()
                 if isinstance(obj, types.FunctionType) and obj.__module__ == module.__name__)


def cache_dir() -> str:
    """Where compiled kernels are kept (see the module docstring)."""
    path = os.environ.get(CACHE_DIR_ENV)
    if path:
        return os.path.abspath(os.path.expanduser(path))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tensorsched")


def _toolchain() -> str:
    import llvmlite
    import numba
    return f"python {sys.version} {sys.platform}; numba {numba.__version__}; " \
           f"llvmlite {llvmlite.__version__}"


def cache_key(source: str, decorate: Callable, options: dict, depends: Iterable[str]) -> str:
    """The hex digest naming one compiled source (see the module docstring)."""
    h = hashlib.sha256()
    for part in (source, f"{decorate.__module__}.{decorate.__qualname__}",
                 repr(sorted(options.items())), *depends, _toolchain()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _write_source(path: str, source: str) -> bool:
    """``source`` at ``path``, written atomically; False when it cannot be."""
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == source:
                return True         # written before: keep its stamp (Numba's index has it)
            stale = True
    except FileNotFoundError:
        stale = False
    except (OSError, UnicodeDecodeError):
        stale = True
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".py", dir=directory)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fd, 0o644)        # mkstemp's 0600 would hide it from a shared cache
            fh.write(source)
        if stale:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)      # the first writer wins; its file keeps its stamp
            except FileExistsError:
                pass
            except OSError:             # no hard links here
                os.replace(tmp, path)
        return True
    except OSError:
        return False
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def compile_source(name: str, source: str, decorate: Callable, functions: Iterable[str],
                   namespace: dict | None = None, options: dict | None = None,
                   cache: bool = False, depends: Iterable = (),
                   filename: str | None = None) -> dict:
    """``source`` executed as module ``name`` on top of ``namespace`` (the
    compiled functions it calls), with ``functions`` replaced by
    ``decorate(f, **options)``.  With ``cache`` the compiled code is kept on
    disk (``decorate`` must take ``cache=True``, as ``numba.njit`` does);
    ``depends`` are the keys of what the source calls (None: not cacheable).
    ``filename`` names the source in tracebacks when it compiles in memory."""
    options = dict(options or {})
    functions = tuple(functions)
    depends = tuple(depends)
    key = path = None
    if cache and all(isinstance(d, str) for d in depends):
        key = cache_key(source, decorate, options, depends)
        stem = re.sub(r"\W+", "_", name.removeprefix("tensorsched.kernels."))
        path = os.path.join(cache_dir(), "numba", f"{stem}-{key[:24]}.py")
        if not _write_source(path, source):
            key = path = None
    if key is None:
        ns: dict = {"__name__": f"{name}_compiled"}
        ns.update(namespace or {})
        exec(compile(source, filename or f"<{name}>", "exec"), ns)
        for fn in functions:
            ns[fn] = decorate(ns[fn], **options)
        ns[KEY] = None
        return ns
    module = types.ModuleType(f"{name}_compiled_{key[:16]}")
    module.__file__ = path
    ns = module.__dict__
    ns.update(namespace or {})
    exec(compile(source, path, "exec"), ns)
    plain = {fn: ns[fn] for fn in functions}
    try:
        for fn in functions:
            ns[fn] = decorate(plain[fn], cache=True, **options)
    except (RuntimeError, OSError):     # Numba found no writable place for its index
        for fn in functions:
            ns[fn] = decorate(plain[fn], **options)
        ns[KEY] = None
        return ns
    ns[KEY] = key
    sys.modules[module.__name__] = module
    return ns


def compile_module(module, decorate: Callable, base: dict | None = None,
                   options: dict | None = None, cache: bool = False) -> dict:
    """``module``'s namespace with every function decorated by
    ``decorate(f, **options)``; on top of ``base`` (an already compiled
    namespace, e.g. the fused rules'), whose compiled functions the module's
    functions can call.  ``cache``: see ``compile_source``."""
    inherited = tuple((base or {}).get(COMPILED, ()))
    own = module_functions(module)
    ns = compile_source(module.__name__, inspect.getsource(module), decorate, own,
                        namespace={k: base[k] for k in inherited}, options=options,
                        cache=cache, depends=(base.get(KEY),) if base is not None else (),
                        filename=module.__file__)
    ns[COMPILED] = inherited + own
    return ns


class AnyLayout:
    """A compiled entry point called with arrays of any memory layout
    through one specialization: the first call of each dtype combination
    compiles (or loads from the cache) the signature with every array typed
    ``A`` (any strides; arrays inside tuple arguments too, as a run's stage
    arguments), and compiling on the arguments' own types stays off,
    so a C-contiguous array (a test's, a caller's copy) and a strided view
    (the state's trimmed node columns, ``ClusterState.columns``) share it.
    Numba would otherwise compile once per layout combination (``visit_rows``:
    ~25 CPU s each).  ``dispatcher`` is the Numba dispatcher; compiled code
    that calls it directly (a run calling the fused pass) resolves to that
    signature too (a C array converts to ``A``).  Other attributes are the
    dispatcher's (``signatures``, ``py_func``, ...).

    ``only``: the names of the parameters whose arrays are typed ``A``;
    the others keep the types of the first call's arguments (None: every
    parameter typed ``A``).  For arrays a caller always allocates
    C-contiguous (a run's scratch and caches), whose C code is faster
    (all of a run's arrays typed ``A``: ~5 % slower warm,
    ``bench/results/fused-runs-any-layout-warm-numba.json``); an argument
    of another layout there later compiles a signature of its own."""

    def __init__(self, dispatcher, only=None):
        self.dispatcher = dispatcher
        self.positions = None if only is None else frozenset(
            list(inspect.signature(dispatcher.py_func).parameters).index(name) for name in only)
        self._own = False           # compiled a signature itself (compiling is off)

    def __call__(self, *args):
        if self._own:
            try:
                return self.dispatcher(*args)
            except TypeError:
                # No compiled signature takes these argument types (else
                # the error is the kernel's own).
                if self.signature_of(args, self.positions) in self.dispatcher.overloads:
                    raise
        self.dispatcher.disable_compile(False)
        try:
            self.dispatcher.compile(self.signature_of(args, self.positions))
        finally:
            self.dispatcher.disable_compile()
        self._own = True
        return self.dispatcher(*args)

    @staticmethod
    def signature_of(args, positions=None) -> tuple:
        """The signature compiled for ``args``: their types with every array
        of any layout (only those of the arguments at ``positions`` where
        given)."""
        # numba imported only where something compiles (as in _toolchain)
        from numba import typeof
        return tuple(with_layout(typeof(a)) if positions is None or k in positions
                     else typeof(a) for k, a in enumerate(args))

    def __getattr__(self, name):
        if name == "dispatcher":      # not set yet (a copy being built)
            raise AttributeError(name)
        return getattr(self.dispatcher, name)


def array_types(t):
    """The array types in Numba type ``t``: itself, or those inside a tuple
    (of tuples)."""
    from numba import types
    if isinstance(t, types.Array):
        yield t
    elif isinstance(t, types.BaseTuple):
        for x in t:
            yield from array_types(x)


def with_layout(t, layout: str = "A"):
    """``t`` with every array in it of ``layout`` (``A``: any): an array,
    or a tuple (of tuples) holding arrays (a run's stage arguments)."""
    from numba import types
    if isinstance(t, types.Array):
        return t.copy(layout=layout)
    if isinstance(t, types.UniTuple):
        return types.UniTuple(with_layout(t.dtype, layout), t.count)
    if isinstance(t, types.Tuple) and not isinstance(t, types.BaseNamedTuple):
        return types.Tuple([with_layout(x, layout) for x in t.types])
    return t


class LazyNjit:
    """Host kernels of a real source file, ``njit(cache=True, nogil=True)``
    compiled on first use: ``build(jit)`` returns ``{name: dispatcher}``
    (``jit`` compiles one function), called once, at the first attribute
    read; ``host.name`` is then the dispatcher.  Numba is imported only
    then (importing a module that holds one costs nothing), and the machine
    code is cached in the ``__pycache__`` next to the source (functions
    that call nothing compiled elsewhere, or whose compiled callees
    ``build`` passes in as globals)."""

    def __init__(self, build: Callable[[Callable], dict]):
        self._build = build
        self._fns: dict | None = None

    def __getattr__(self, name):
        fns = self._fns
        if fns is None:
            from numba import njit

            fns = self._fns = self._build(lambda f: njit(cache=True, nogil=True)(f))
        try:
            return fns[name]
        except KeyError:
            raise AttributeError(name) from None
