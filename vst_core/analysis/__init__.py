"""Analysis over many stories: agreement with people (meta_eval), human-likeness (dhm), two systems
head to head (systems), Dataset slices (slices), our scores against another source's (compare)."""
