"""What every tab shares: strings (``i18n``), settings controls built from the parameter table
(``controls``), per-visitor state helpers (``state``, ``session``), job bounds (``sessions``),
the tab protocol (``tab``), errors for the toast (``errors``), plots, exports and share links."""
