"""The signalling instrument (Huynh, "Consistency Without Alignment", arXiv 2609.00576).

A chooser who knows a hidden (Means, Clue) pair sends one option of a fixed property tile; the
salience (fit-maximising), Bayes (posterior-maximising) and uniform-random references are exact,
so any chooser's coordinate can be placed between them. Section numbers in docstrings are the
paper's.
"""

from choiceaudit.instruments.signalling._fetch import (
    CHECKSUM_FILE,
    DEFAULT_THINGS_URLS,
    THINGS_FILES,
    THINGS_SHA256,
    ChecksumError,
    FetchReport,
    fetch_things,
)
from choiceaudit.instruments.signalling._lancaster import (
    LANCASTER_MODALITIES,
    PERCEPTUAL_SCALE,
    lancaster_files,
    load_lancaster,
)
from choiceaudit.instruments.signalling._norms import Dimension, NormsBundle, NormsFormatError
from choiceaudit.instruments.signalling._pool import Pool, build_pool, retention_report
from choiceaudit.instruments.signalling._things import (
    LIKERT_SCALE,
    PROPERTY_DIMENSIONS,
    SIZE_SCALE,
    PropertyRatings,
    SizeRatings,
    Spose,
    ThingsConcepts,
    load_things,
    read_property_ratings,
    read_size_ratings,
    read_spose,
    read_things_concepts,
)
from choiceaudit.instruments.signalling._tiles import (
    Tile,
    load_tiles,
    rater_disagreement_ratio,
    redundancy_clusters,
    select_tile_dimensions,
    tiles_hash,
    tiles_text,
)

__all__ = [
    "CHECKSUM_FILE",
    "DEFAULT_THINGS_URLS",
    "LANCASTER_MODALITIES",
    "LIKERT_SCALE",
    "PERCEPTUAL_SCALE",
    "PROPERTY_DIMENSIONS",
    "SIZE_SCALE",
    "THINGS_FILES",
    "THINGS_SHA256",
    "ChecksumError",
    "Dimension",
    "FetchReport",
    "NormsBundle",
    "NormsFormatError",
    "Pool",
    "PropertyRatings",
    "SizeRatings",
    "Spose",
    "ThingsConcepts",
    "Tile",
    "build_pool",
    "fetch_things",
    "lancaster_files",
    "load_lancaster",
    "load_things",
    "rater_disagreement_ratio",
    "read_property_ratings",
    "read_size_ratings",
    "read_spose",
    "read_things_concepts",
    "redundancy_clusters",
    "retention_report",
    "select_tile_dimensions",
    "tiles_hash",
    "tiles_text",
]
