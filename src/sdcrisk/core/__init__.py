"""Layer 2, core: the per-cell predictive laws of the unseen counts (predictive, with the
negative-binomial and Poisson numerics of _nb and _poisson), the risk measures written once as
functions of them (measures) and the results (result). Imports only data below it."""
