"""Layer 5, analyses: what is done with estimators - sampling designs and evaluation against
the truth (sampling, evaluate, grid), validation and the meta-estimator auto above the models
(validation, auto), the registry of every method the user can name (methods), key-variable
scenarios, recommendations, Zaslavsky-Horton decisions, SUDA and population uniqueness."""
