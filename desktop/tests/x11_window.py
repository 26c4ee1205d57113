"""The X11 side of desktop/tests/window.rs, with libX11 through ctypes (no X tools needed).

    x11_window.py title PREFIX   prints the title of the top-level window whose title starts
                                 with PREFIX (exit 1 if there is none)
    x11_window.py close PREFIX   asks that window to close, as a window manager's close button
                                 does (a WM_DELETE_WINDOW client message)
    x11_window.py type PREFIX TEXT...
                                 gives that window the input focus and types each TEXT through
                                 XTest, a word "<Return>" as the Return key
    x11_window.py focus-away -   maps a small window of its own and gives it the input focus, as
                                 a person switching to another application does; prints "ready"
                                 and keeps it until its standard input closes
"""
import ctypes
import ctypes.util
import sys
import time

x = ctypes.cdll.LoadLibrary(ctypes.util.find_library("X11") or "libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XDefaultRootWindow.restype = ctypes.c_ulong
x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x.XInternAtom.restype = ctypes.c_ulong
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                         ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong)),
                         ctypes.POINTER(ctypes.c_uint)]
x.XGetWindowProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long,
                                 ctypes.c_long, ctypes.c_int, ctypes.c_ulong,
                                 ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int),
                                 ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong),
                                 ctypes.POINTER(ctypes.c_void_p)]
x.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
x.XFlush.argtypes = [ctypes.c_void_p]
x.XFree.argtypes = [ctypes.c_void_p]
xtst = ctypes.cdll.LoadLibrary(ctypes.util.find_library("Xtst") or "libXtst.so.6")
xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
x.XStringToKeysym.restype = ctypes.c_ulong
x.XStringToKeysym.argtypes = [ctypes.c_char_p]
x.XKeysymToKeycode.restype = ctypes.c_ubyte
x.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
x.XCreateSimpleWindow.restype = ctypes.c_ulong
x.XCreateSimpleWindow.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong,
                                  ctypes.c_ulong]
x.XMapRaised.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
x.XSetInputFocus.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_ulong]
x.XGetInputFocus.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int)]


class WindowAttributes(ctypes.Structure):
    # Only map_state is read; the rest of XWindowAttributes is covered by padding.
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("border_width", ctypes.c_int), ("depth", ctypes.c_int),
                ("visual", ctypes.c_void_p), ("root", ctypes.c_ulong), ("class_", ctypes.c_int),
                ("bit_gravity", ctypes.c_int), ("win_gravity", ctypes.c_int),
                ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong),
                ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int),
                ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int),
                ("map_state", ctypes.c_int), ("pad", ctypes.c_long * 16)]


x.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(WindowAttributes)]


KEY_NAMES = {"/": "slash", ".": "period", "-": "minus", "_": "underscore", " ": "space"}


def press(display, name, shift=False):
    keycode = x.XKeysymToKeycode(display, x.XStringToKeysym(name.encode()))
    if not keycode:
        sys.exit(f"no key for {name}")
    shift_code = x.XKeysymToKeycode(display, x.XStringToKeysym(b"Shift_L"))
    if shift:
        xtst.XTestFakeKeyEvent(display, shift_code, 1, 0)
    xtst.XTestFakeKeyEvent(display, keycode, 1, 0)
    xtst.XTestFakeKeyEvent(display, keycode, 0, 0)
    if shift:
        xtst.XTestFakeKeyEvent(display, shift_code, 0, 0)
    x.XSync(display, 0)


def type_into(display, window, words):
    x.XSetInputFocus(display, window, 2, 0)
    x.XSync(display, 0)
    for word in words:
        if word == "<Return>":
            press(display, "Return")
            continue
        for char in word:
            press(display, KEY_NAMES.get(char, char), shift=char.isupper() or char == "_")


def focus_away(display):
    window = x.XCreateSimpleWindow(display, x.XDefaultRootWindow(display), 0, 0, 20, 20, 0, 0, 0)
    x.XMapRaised(display, window)
    attributes = WindowAttributes()
    deadline = time.monotonic() + 60
    while True:
        x.XSync(display, 0)
        x.XGetWindowAttributes(display, window, ctypes.byref(attributes))
        if attributes.map_state == 2:  # IsViewable
            break
        if time.monotonic() > deadline:
            sys.exit("the window was never mapped")
        time.sleep(0.02)
    x.XSetInputFocus(display, window, 2, 0)  # RevertToParent, CurrentTime
    x.XSync(display, 0)
    focused, revert = ctypes.c_ulong(), ctypes.c_int()
    x.XGetInputFocus(display, ctypes.byref(focused), ctypes.byref(revert))
    if focused.value != window:
        sys.exit("the focus did not move")
    print("ready", flush=True)
    sys.stdin.read()


class ClientMessage(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("window", ctypes.c_ulong),
                ("message_type", ctypes.c_ulong), ("format", ctypes.c_int),
                ("data", ctypes.c_long * 5), ("pad", ctypes.c_long * 12)]


def title_of(display, window, net_wm_name, utf8):
    kind, fmt = ctypes.c_ulong(), ctypes.c_int()
    count, left, data = ctypes.c_ulong(), ctypes.c_ulong(), ctypes.c_void_p()
    if x.XGetWindowProperty(display, window, net_wm_name, 0, 1024, 0, utf8, ctypes.byref(kind),
                            ctypes.byref(fmt), ctypes.byref(count), ctypes.byref(left),
                            ctypes.byref(data)) != 0 or not data.value:
        return None
    title = ctypes.string_at(data.value, count.value).decode("utf-8", "replace")
    x.XFree(data)
    return title


def windows(display, window):
    root, parent = ctypes.c_ulong(), ctypes.c_ulong()
    children, count = ctypes.POINTER(ctypes.c_ulong)(), ctypes.c_uint()
    if not x.XQueryTree(display, window, ctypes.byref(root), ctypes.byref(parent),
                        ctypes.byref(children), ctypes.byref(count)):
        return []
    found = [children[i] for i in range(count.value)]
    if count.value:
        x.XFree(children)
    return found + [w for child in found for w in windows(display, child)]


def main():
    command, prefix = sys.argv[1], sys.argv[2]
    display = x.XOpenDisplay(None)
    if not display:
        sys.exit("cannot open the display")
    if command == "focus-away":
        focus_away(display)
        return
    net_wm_name = x.XInternAtom(display, b"_NET_WM_NAME", 0)
    utf8 = x.XInternAtom(display, b"UTF8_STRING", 0)
    for window in windows(display, x.XDefaultRootWindow(display)):
        title = title_of(display, window, net_wm_name, utf8)
        if title is None or not title.startswith(prefix):
            continue
        if command == "title":
            print(title)
        elif command == "type":
            type_into(display, window, sys.argv[3:])
        else:
            event = ClientMessage(type=33, send_event=1, display=display, window=window, format=32,
                                  message_type=x.XInternAtom(display, b"WM_PROTOCOLS", 0))
            event.data[0] = x.XInternAtom(display, b"WM_DELETE_WINDOW", 0)
            x.XSendEvent(display, window, 0, 0, ctypes.byref(event))
            x.XFlush(display)
        return
    sys.exit(f"no window titled {prefix}…")


main()
