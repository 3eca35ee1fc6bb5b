"""The ``local:`` model lane: open-weight models served by llama.cpp on loopback, offline.

``catalog`` names the models and where their weights come from, ``store``
installs and finds the weights, ``server`` runs one llama.cpp server per model
as a managed child process, and ``provider`` registers ``local:<name>`` on top
of the ordinary OpenAI-compatible provider.
"""
