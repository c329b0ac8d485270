"""A class in one room: the teacher's screen pushed to every student, the room's answers counted
live, a reveal, a second round, and the counts as CSV. No gradio here: the Lessons tab draws it
(``decoding_lab.ui.classroom``).

* ``codes``: join codes (40 random bits, typed on a phone) and the wrong-code rate per client.
* ``rooms``: ``Room`` and ``RoomHall``, the process's rooms with their limits.
* ``questions``: what a lesson screen asks (its prediction, the checks on its last screen).
* ``tally``: the room's answers summed per question and round, with no names, and as CSV.
"""

from decoding_lab.classroom.codes import CODE_BITS, format_code, new_code, parse_code
from decoding_lab.classroom.questions import Question, questions_on
from decoding_lab.classroom.rooms import Answer, Room, RoomError, RoomHall, RoomLimits
from decoding_lab.classroom.tally import Tally, tally, to_csv

__all__ = ["CODE_BITS", "format_code", "new_code", "parse_code", "Question", "questions_on", "Answer", "Room",
           "RoomError", "RoomHall", "RoomLimits", "Tally", "tally", "to_csv"]
