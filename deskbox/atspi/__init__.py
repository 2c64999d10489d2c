"""Native apps over AT-SPI: a reader that lists what GTK apps and Chromium's own UI
expose to assistive technology, and performs their actions.

``AtspiReader`` speaks AT-SPI's D-Bus interfaces directly (dbus-fast, asyncio) and
keeps every call of a round in flight at once; libatspi is used only for its tables
of role and state names. A service runs it in a worker process
(``deskbox.atspi.worker``, driven by ``deskbox.atspi.source.NativeSource``).

Where it must run
    As the session user. GTK3 apps and Chromium answer AT-SPI on a peer-to-peer
    socket of their own that admits only their own uid: a reader running as root
    sees them as ``defunct`` (measured). GTK4 apps answer on the accessibility bus.
    It needs the session's ``DBUS_SESSION_BUS_ADDRESS`` (``deskbox up`` gives it to
    every child) and asks that bus for the accessibility bus.

What a snapshot keeps
    Nodes that are on screen (state ``showing`` or ``visible``: GTK 4.8 sets only
    ``visible`` below the frame) with a box, and that are named, focusable, or of a
    role an agent acts on or reads. Unnamed layout containers (panel, filler,
    section, scroll pane ...), labels repeating their parent's name and the inside of
    a control that has its own click action (its label, icon) are left out,
    but ``depth`` stays the node's depth in the AT-SPI tree, so the nearest preceding
    node with a smaller depth is its kept ancestor. Subtrees that are neither showing
    nor visible are not walked at all: that is most of Chromium's tree (hidden
    buttons, notifications) and the walk's main saving. With ``prune_documents`` the
    ``document web`` subtrees of Chromium-family apps are skipped (page content comes
    from CDP) while tabs, address bar and toolbar stay; Chromium's hidden omnibox
    popup frames (unnamed frames holding only a document) then have nothing to show
    and are left out.

    GTK 4.8 quirks are repaired in ``name``: a widget without a name is named after
    its type (``GtkMenuButton``, ``AdwGizmo``): the reader uses its label child's
    text or else its description (tooltip), or ``""``; a button's label is doubled
    (``"7 7"``): the reader keeps one.

Coordinates (measured with Sway 1.7, headless, outputs at scale 1 and 2; GTK 3.24.38,
GTK 4.8.3 / libadwaita (gnome-calculator 43), Chromium 156; no Xwayland)
    ``extents`` are AT-SPI's WINDOW coordinates, untouched: **layout (logical)
    pixels** relative to the app's **top-level surface**. On Wayland an app does not
    know where its window is, so DESKTOP coordinates are the same numbers (or
    garbage, for Chromium's popups). They are not device pixels: at output scale 2 a
    GTK button 34 px high in ``extents`` is 68 px high in the screenshot. Off-screen
    GTK3 children report ``(-2147483648, -2147483648, 1, 1)``: ``extents`` is None.

    The surface is not always the window that Sway places. Sway places the window's
    *visible part* (its xdg window geometry) at the content rect of its tree node
    (``rect`` + ``window_rect``); shadows drawn by the client lie outside. Measured:

    - GTK 4 (gnome-calculator), tiled and floating: the frame's extents are exactly
      the visible window (``(0, 0, w, h)`` with Sway's content size); no inset.
    - GTK 3 with server-side decorations (a plain GtkWindow: Sway offers them), tiled
      and floating: frame ``(0, 0, w, h)`` = Sway's content size; no inset.
    - GTK 3 with a GtkHeaderBar (client-side decorations), floating: the surface has
      Adwaita's shadow around the window: frame 472x419 for a 420x367 window, the
      window starting at (26, 23) (26 left and right, 23 top, 29 bottom). Tiled, GTK
      drops the shadow (no inset).
    - Chromium, tiled or floating: its surface keeps a 10 px margin on every side:
      frame 660x820 for a 640x800 tile; the root view (an unnamed panel) is at
      (10, 10, 640, 800); toolbar buttons are offset by those 10 px.
    - A window narrower than its tile (min size above the tile's) is clipped at the
      tile's left/top edge; one smaller than its tile (a max size below it) is
      centred in the tile by Sway.
    - Chromium's page content (inside ``document web``) reports extents in *device*
      pixels (scaled by the output scale) while its toolbar reports layout pixels:
      another reason to take pages from CDP.

    ``visible_window(frame_node, content_size)`` finds the visible window inside the
    frame's extents (from the frame's near-full-size descendants, kept in
    ``NativeNode.spans``). The map to display-local device pixels, for a node of a
    window whose Sway node has ``rect`` R and ``window_rect`` W on an output with
    layout rect O and scale S, with ``(vx, vy, vw, vh) = visible_window(frame, (W.w, W.h))``::

        cx = R.x + W.x + max(0, (W.w - vw) / 2)      # Sway centres a smaller window
        cy = R.y + W.y + max(0, (W.h - vh) / 2)
        device_x = (cx - O.x + extents.x - vx) * S
        device_y = (cy - O.y + extents.y - vy) * S
        device_w = extents.w * S,  device_h = extents.h * S

    Clicking the centre of a box mapped that way landed on the node in every case
    above (fixture buttons report the click; calculator digits appear in its display).
    GTK 4.8 reports a button's box a few pixels inside the drawn button (4 px left and
    right, 2 px top and bottom on the calculator's keypad): the same centre.

Walk cost
    A GTK 4 app (and a GTK 3 app, once some client has turned AT-SPI events on) keeps
    a cache: every object's name, role, states, parent and child count come in one
    ``Cache.GetItems`` call. The selection (``Selection``, pure) then says what else
    it needs (boxes of the nodes it keeps, values, actions, the children of a parent
    whose count disagrees with the cache) and those calls go out together: two rounds
    in all. A browser (its cache would hold every page node too), LibreOffice (its cache
    holds every cell and menu item it ever made) and an app without a cache are read one
    tree level per round, each level's calls at once, except that
    everything the app's last walk read is asked again at once in a first round (the
    levels then fetch only what changed); an object's role, interfaces and actions are
    asked once, and of an object hidden last time only its state is asked until it
    shows. Apps that offer a peer-to-peer socket
    (atk-bridge: Chromium, GTK 3) are asked there rather than through the bus daemon
    (twice as fast a call). A control with its own click action is not walked into. An
    app's walk has ``APP_TIMEOUT_S``; an app that does not answer is left out.
    Measured on this 2-core machine with Chromium on a 1,000-element page beside
    gnome-calculator and the GTK 3 fixture, on a quiet machine: 25-40 ms a snapshot
    (median 30; 217 objects visited, 60 kept), where libatspi's one-call-at-a-time
    walk of the same apps took 100-280 ms. ``snapshot(pids=...)`` walks only the apps whose windows
    changed; ``python -m deskbox.atspi --repeat N`` prints a session's figures.
    A Calc sheet's visible cells are read by row and column (``sheets``), and
    kept from the previous snapshot for the rows whose pixels the caller says held still.
    A call is a future answered by a callback (``AtspiReader.send``), at most
    ``MAX_IN_FLIGHT`` on the wire, the rest queued in order: half the CPU of
    dbus-fast's coroutine form behind a semaphore.

The full read
    ``full_tree()`` reads every node of every app with everything it has (states,
    object attributes, text, value, actions): what OSWorld's ``/accessibility`` is
    made of (``full``). The same connections, caches and timeouts; nothing pruned.

The package sits below the services (as ``deskbox.cdp`` does). Its modules: ``tree`` (what a node is, the objects read from
an app, AT-SPI's names and numbers), ``selection`` (which objects become nodes: pure,
no D-Bus), ``reader`` (the D-Bus reader), ``sheets`` (a sheet's visible cells), ``full``
(the full read), ``events`` (which apps sent AT-SPI events since their last walk: a
snapshot gives LibreOffice's last walk again while it holds still and sends none),
``worker`` and ``source`` (the reader in a process of its own, and its asyncio client). The scene aggregator and the OSWorld server both read through it.
"""

from .reader import AtspiReader
from .tree import AtspiError, NativeNode, NoSuchAction, cell_name, visible_window

__all__ = ["NativeNode", "AtspiReader", "AtspiError", "NoSuchAction", "visible_window", "cell_name"]
