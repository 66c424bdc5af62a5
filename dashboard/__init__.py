"""The dashboard's Streamlit side: the sidebar (:mod:`.sidebar`) and its pure mapping to settings
(:mod:`.choices`), cached loaders and models (:mod:`.loading`), the frame that scores what the
sidebar loaded (:mod:`.frame`), and the session-state keys they share (:mod:`.keys`, so neither the
frame nor the sidebar imports the other). ``app.py`` is the entry point; the pages are in ``app_pages/``.
Text from a file or a visitor reaches a page through :mod:`vst_core.viz.safe` (as text, never as
markup, and without the server's folders)."""
