"""Deploying exactly what was certified: integer sampling tables, mechanism packages and exact samplers.

* :mod:`designer.deploy.table` — a channel's deployable form: rows of integers summing to ``2^b``,
  rounded so that the rational channel ``table / 2^b`` is still E-LDP, certified exactly;
* :mod:`designer.deploy.package` — the versioned JSON mechanism package (schema
  ``mechanism-package.schema.json``), its validation and re-certification;
* :mod:`designer.deploy.structured` — block Hadamard response and high-low Hadamard response
  packaged by their parameters, integer thresholds and exact structural proofs (too large to
  tabulate at k = 43,750 or k = 100,000);
* :mod:`designer.deploy.signing` — Ed25519 key files and package signatures (``cryptography``);
* :mod:`designer.deploy.policy` — a package's E against the organisation's policy E, compared exactly;
* :mod:`designer.deploy.sampler` — the standard-library client (``secrets``): one uniform integer
  in ``[0, 2^b)`` compared with integer thresholds, so ``P(Y = y | X = x)`` is the table entry exactly;
* :mod:`designer.deploy.vectorised` — the bulk client (ChaCha20 from ``randomgen``, same comparison);
* ``designer/deploy/js/ldp-client.mjs`` — the JavaScript client (``crypto.getRandomValues``).

Importing this package loads nothing heavy.
"""
