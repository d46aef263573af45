"""Defaults and names shared by the library and the command line.

Constants only, and no imports: the commands declare their options (defaults,
choices, help) from here, so ``ldp-designer --help`` and ``import designer.cli``
load neither numpy nor a solver. The library modules re-export these names
(``designer.cone.DEFAULT_MAX_VERTICES`` is this ``DEFAULT_MAX_VERTICES``).
"""

#: Default limit on the number of cone vertices: checked before anything is
#: enumerated where the count is known in closed form (classic LDP at k = 20 has
#: 1,048,574), and on the result of an enumeration otherwise.
DEFAULT_MAX_VERTICES = 1_000_000
#: Default wall-clock budget of one component's enumeration. Only the upper
#: bound theorem is known before enumerating, and it is far too loose to refuse
#: on (a 3x4 L1 grid: bound 1,316,016, 374 vertices in 0.02 s; high-low with
#: k = 16: bound 2.5e7, 17 vertices), so a component that *may* be large is
#: enumerated in a child process and stopped when this budget runs out.
DEFAULT_MAX_SECONDS = 120.0

#: Names of the f-divergences offered as design utilities, in the order of
#: :data:`designer.utility.F_DIVERGENCES` (which holds their generators ``f``).
F_DIVERGENCE_NAMES = ("kl", "chi-square", "hellinger", "total-variation")
#: Utilities optimised over cone vertices.
VERTEX_UTILITIES = ("mutual-information", *F_DIVERGENCE_NAMES)
#: Routes of the design front door (designer.design.routes) for every utility but the expected loss: "auto" and
#: the routes one may ask for.
ROUTE_METHODS = ("auto", "closed-form", "enumerate", "symmetry", "column-generation")
#: Methods of the expected-loss design (designer.design.expected_loss): "auto" and the methods one may ask for.
EXPECTED_LOSS_METHODS = ("auto", "closed-form", "direct", "column-generation", "interior-point", "first-order")
#: Every ``--method`` of ``design``: the routes, then the expected loss's own methods.
DESIGN_METHODS = tuple(dict.fromkeys(ROUTE_METHODS + EXPECTED_LOSS_METHODS))
#: Relative gap at which column generation for mutual information stops unless told otherwise.
DEFAULT_INFORMATION_GAP = 0.01
#: Relative gap ``(upper - lower) / upper`` at which the expected loss's LP methods stop unless told otherwise.
#: The bound's own floor is the pricing LPs' dual tolerance (1e-10 of the scaled costs) summed over k rows:
#: about 1e-7 relative at k = 1,600 (a 40 x 40 grid sat at 1.1-1.4e-7 for seven rounds), so a smaller default
#: would spend the time budget on noise there.
DEFAULT_LOSS_GAP = 1e-6

#: Robust certifier: slack on the column-scaled condition (2) of robust-ldp-chi-square.md.
ROBUST_TOLERANCE = 1e-9
#: Robust certifier: branch-and-bound budget (intervals) per (y, s, s') triple
#: before a triple is inconclusive.
ROBUST_MAX_INTERVALS = 2048

#: Audit: pairs tested when ``--max-pairs`` is not given and testing all of them costs too much
#: power (the most promising on the training split).
AUDIT_MAX_PAIRS = 8
#: Audit: pairs kept after the adaptive budget's narrowing round.
AUDIT_NARROWED_MAX_PAIRS = 2
#: Audit: the boosted-tree attack runs up to this many reports (then logistic regression alone).
AUDIT_BOOSTED_LIMIT = 400_000
#: Audit: GiB the reports may take.
AUDIT_MAX_MEMORY_GIB = 2.0
#: Audit: share of every input's reports used to choose pairs and events.
AUDIT_TRAIN_FRACTION = 0.3
#: Audit: probability that a "violated" verdict is right.
AUDIT_CONFIDENCE = 0.95
#: Audit: seconds a ``--sampler`` call or a ``--command`` program may take per batch of inputs.
AUDIT_COMMAND_TIMEOUT = 60.0
