"""Layer 3, runtime: where work runs (executors: this process, local processes, Dask), the
shared MCMC driver (mcmc) and its convergence diagnostics."""
