"""The scene aggregator: one Scene JSON for the whole session in display-local device
pixels, merging desktopd (displays, windows, frames), the CDP bridge (page content) and
AT-SPI (native apps and the browser's own UI); stable element ids; element actions that
drive desktopd with real input.

Nouns: a **Scene** is one observation; an **Element** is one entry of its ``ax`` list;
an **Action** is what ``POST /api/v1/act`` does to an element."""
