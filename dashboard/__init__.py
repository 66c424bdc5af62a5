"""The dashboard's Streamlit side: the sidebar (:mod:`.sidebar`) and its pure mapping to settings
(:mod:`.choices`), cached loaders and models (:mod:`.loading`), and the frame that scores what the
sidebar loaded (:mod:`.frame`). ``app.py`` is the entry point; the pages are in ``pages/``."""
