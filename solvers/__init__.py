"""Numerical back ends that know nothing about privacy.

Modules here take arrays and return arrays: max-plus products, vertex
enumeration, linear and convex programs. The privacy layer (``designer``)
imports them; they never import ``designer``.
"""
