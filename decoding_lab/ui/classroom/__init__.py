"""The class room in the Lessons tab: a teacher opens a class (code, QR code, link) and every
screen they page to is pushed to the students' devices; students answer the screen's prediction
or checks (with an optional confidence); the projector shows the class's answers live, round
beside round; the teacher reveals (the experiment runs once) and everyone sees the result beside
their own answer. The rooms themselves are ``decoding_lab.classroom`` (no gradio).

``layout`` places the components, ``views`` draws them from a room, ``handlers`` wires them."""
