"""Fly one Flappy Drone episode with the model's decisions and draw it as an animated GIF.

    python3 tools/train/play.py [--skycmd build/skycmd] [--model models/s1-pico-flappy.gguf]
                                [--seed 11] [--steps 240] [--out docs/flappy-drone.gif]

Each step the drone's state (the text of tools/train/flappy.py) goes to `skycmd serve`'s
/v1/systemone with the three example questions; the drone thrusts when the model says
"thrust", the world moves on, and the frame shows the walls, the flown path, and the
model's P(thrust), P(danger) and margin. The episode ends at a crash or after --steps.
Needs Pillow (tools/train/requirements.txt) and ImageMagick's `convert` (Debian:
imagemagick): Pillow writes every frame after the first as the rectangle that changed, which
viewers that do not coalesce frames show garbled, so the file is rewritten with whole frames
(`convert -coalesce`).
"""
import argparse
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import flappy  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skycmd", default=os.path.join(ROOT, "build", "skycmd"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "s1-pico-flappy.gguf"))
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "flappy-drone.gif"))
    a = ap.parse_args()
    from PIL import Image, ImageDraw

    port = free_port()
    server = subprocess.Popen([a.skycmd, "serve", "--model", a.model, "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d" % port
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(url + "/health", timeout=1).read()
                break
            except OSError:
                time.sleep(0.05)
        rng = random.Random(a.seed)
        gap = flappy.random_gap(rng)
        w = flappy.World(flappy.center(gap), 0, 30, gap, flappy.random_gap(rng, flappy.center(gap)))
        frames, path, walls_passed = [], [], 0
        scale, width, height = 6, 90, flappy.CEILING
        for step in range(a.steps):
            body = json.dumps({"state": w.text(), "questions": flappy.questions(None)}).encode()
            req = urllib.request.Request(url + "/v1/systemone", data=body,
                                         headers={"Content-Type": "application/json"})
            ans = json.loads(urllib.request.urlopen(req, timeout=10).read())["answers"]
            action = ans["action"]["choice"]
            path.append(w.alt)
            img = Image.new("RGB", (width * scale, height * scale), (18, 24, 38))
            d = ImageDraw.Draw(img)
            drone_x = 20
            for wall_dx, g in ((w.dx, w.gap), (w.dx + flappy.SPACING, w.next_gap)):
                x0 = drone_x + wall_dx
                for y0, y1 in ((0, g.bottom), (g.top, height)):
                    d.rectangle([x0 * scale, (height - y1) * scale, (x0 + flappy.WALL) * scale,
                                 (height - y0) * scale], fill=(70, 160, 90))
            trail = path[-drone_x:]
            points = [((drone_x - (len(trail) - 1 - k)) * scale, (height - alt) * scale)
                      for k, alt in enumerate(trail)]
            if len(points) > 1:
                d.line(points, fill=(240, 200, 80), width=2)
            d.ellipse([(drone_x - 1.5) * scale, (height - w.alt - 1.5) * scale,
                       (drone_x + 1.5) * scale, (height - w.alt + 1.5) * scale],
                      fill=(250, 90, 70) if action == "thrust" else (240, 240, 240))
            p_thrust = ans["action"]["probabilities"]["thrust"]
            d.text((6, 6), "step %d  %s  P(thrust) %.2f  P(danger) %.2f  margin %.1f  walls %d"
                   % (step, w.text(), p_thrust, ans["danger"]["noul"], ans["margin"]["score"], walls_passed),
                   fill=(230, 230, 230))
            frames.append(img)
            before = w.gap
            w, dead = flappy.advance(w, action, rng)
            if w.gap != before:
                walls_passed += 1
            if dead:
                print("crashed at step %d after %d walls" % (step + 1, walls_passed))
                break
        else:
            print("flew %d steps, %d walls passed, no crash" % (a.steps, walls_passed))
        frames[0].save(a.out, save_all=True, append_images=frames[1:], duration=60, loop=0, optimize=True)
        subprocess.run(["convert", a.out, "-coalesce", a.out], check=True)  # whole frames
        print("wrote %s (%d whole frames)" % (a.out, len(frames)))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
