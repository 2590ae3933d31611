"""The gpuclient test cloud (driven by tools/testcloud; not shipped).

Modules imported by tools/testcloud (cli, the verbs; base, the shared
pieces; stack, install and one module per service; api, seed) use the
standard library only, so they run with the system python3 before the
cloud's venv exists.  fakevirt and compute run inside nova-compute (the
venv), and neutron_stub under uWSGI.
"""
