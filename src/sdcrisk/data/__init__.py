"""Layer 1, data: reading files and frames (io), level coding, Microdata and CellTable
(table), out-of-core tabulation, households, structural zeros and the bundled datasets.
Imports nothing else of sdcrisk but exceptions."""
