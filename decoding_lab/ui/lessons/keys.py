"""Keyboard paging for teacher mode, run once when the page loads: → or PageDown presses "Next",
← or PageUp presses "Previous", while the teacher-mode box is ticked and the Lessons tab is on screen.
Keys typed into a text box, a number box or a choice are left alone."""

from decoding_lab.ui.common.scripts import script


PAGING_JS = script("teacher_keys")
