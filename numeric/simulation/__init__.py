"""Seeded discrete-event simulation of the models, with confidence intervals.

The simulator is the independent empirical check of the analytic engines and the tool
for variants no closed form covers. It shares nothing with the formulas but the model
object and the laws' own samplers (``law.sample``). Each model module here exposes
``simulate(model, customers, replications, seed, *, warmup, quiet)`` returning a
:class:`~qderive.numeric.simulation.stats.SimulationResult` whose measure keys are those of
``qderive eval``; the method is in :mod:`qderive.numeric.simulation.stats`.
"""
