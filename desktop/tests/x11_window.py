"""The X11 side of desktop/tests/window.rs, with libX11 through ctypes (no X tools needed).

    x11_window.py title PREFIX   prints the title of the top-level window whose title starts
                                 with PREFIX (exit 1 if there is none)
    x11_window.py close PREFIX   asks that window to close, as a window manager's close button
                                 does (a WM_DELETE_WINDOW client message)
"""
import ctypes
import ctypes.util
import sys

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
    net_wm_name = x.XInternAtom(display, b"_NET_WM_NAME", 0)
    utf8 = x.XInternAtom(display, b"UTF8_STRING", 0)
    for window in windows(display, x.XDefaultRootWindow(display)):
        title = title_of(display, window, net_wm_name, utf8)
        if title is None or not title.startswith(prefix):
            continue
        if command == "title":
            print(title)
        else:
            event = ClientMessage(type=33, send_event=1, display=display, window=window, format=32,
                                  message_type=x.XInternAtom(display, b"WM_PROTOCOLS", 0))
            event.data[0] = x.XInternAtom(display, b"WM_DELETE_WINDOW", 0)
            x.XSendEvent(display, window, 0, 0, ctypes.byref(event))
            x.XFlush(display)
        return
    sys.exit(f"no window titled {prefix}…")


main()
