"""Regenerates gt/*.json and pred/*_pred.json of the narrative sample from the annotations written below.

The stories and every annotation are ours, written by hand for this repository. Offsets are never counted by hand:
a span is written as the exact text it covers and its start/end are found in the story (the text must occur once).
Run from the repository root: `python datasets/narrative/build_sample.py`; the JSON files are what the code reads.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
AUTHOR = "emocaustics team (written for this repository)"


def span(text: str, part: str) -> dict[str, Any]:
    start = text.find(part)
    assert start >= 0 and text.find(part, start + 1) < 0, f"span text must occur exactly once: {part!r}"
    return {"start": start, "end": start + len(part), "text": part}


def rel(agent: str, target: str, l1: Any, l2: Any, sentiment: Any) -> dict[str, Any]:
    return {"agent": agent, "target": target, "relationship_level1": l1, "relationship_level2": l2,
            "sentiment": sentiment}


def act(category: Any, type_: Any, context: Any, status: Any, function: Any) -> dict[str, Any]:
    return {"category": category, "type": type_, "context": context, "status": status, "function": function}


def event(text: str, eid: str, part: Any, agents: list[str], targets: list[str], rels: Any, action: Any,
          span_key: bool = True) -> dict[str, Any]:
    """`part`: the covered text (offsets computed), None (text_span null), or a dict written out verbatim."""
    ev: dict[str, Any] = {"id": eid}
    if span_key:
        ev["text_span"] = span(text, part) if isinstance(part, str) else part
    ev |= {"agents": agents, "targets": targets, "relationships": rels, "action_layer": action}
    return ev


def story(title: str, language: str, text: str, characters: list[dict[str, Any]],
          events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": "3.0", "metadata": {"title": title, "language": language, "author": AUTHOR,
                                           "annotation": "hand-made ground truth"},
            "source_info": {"text_content": text}, "characters": characters, "narrative_events": events}


def ch(name: str, alias: Any, archetype: Any) -> dict[str, Any]:
    return {"name": name, "alias": alias, "archetype": archetype}


# ---------------------------------------------------------------------------------------------------------------
# 1. lantern_zh: complete ground truth.
LANTERN = (
    "元宵节前一天，阿梅在老街的灯笼铺里帮师傅糊灯笼。师傅老周是她的舅舅，总叫她梅梅，手艺在整条街上数一数二。\n"
    "傍晚，邻居家的小虎跑进铺子，不小心撞翻了一排刚晾好的荷花灯。小虎吓得直哭，说：“我不是故意的！”\n"
    "老周没有骂他，只是叹了口气，让阿梅拿来新的竹篾。阿梅一边安慰小虎，一边教他怎么扎灯骨。\n"
    "夜深了，三个人一起重新糊好了十盏荷花灯。小虎提着第一盏灯跑回家，说要给奶奶看。\n"
    "第二天的灯会上，老周的荷花灯得了头奖。他把奖状交给阿梅，说：“以后这铺子就交给你了。”阿梅红了眼眶，点了点头。"
)
T = LANTERN
lantern = story("灯笼", "zh", T, [
    ch("阿梅", ["梅梅"], "hero"), ch("老周", ["周师傅", "舅舅"], "mentor"), ch("小虎", [], "innocent")], [
    event(T, "e1", "元宵节前一天，阿梅在老街的灯笼铺里帮师傅糊灯笼。", ["阿梅"], ["老周"],
          [rel("阿梅", "老周", "professional", "master_apprentice", ["respect", "trust"])],
          act("social", "help", "work", "ongoing", "exposition")),
    event(T, "e2", "傍晚，邻居家的小虎跑进铺子，不小心撞翻了一排刚晾好的荷花灯。", ["小虎"], ["老周"],
          [rel("小虎", "老周", "social", "neighbours", ["fear"])],
          act("physical", "destroy", "work", "completed", "inciting_incident")),
    event(T, "e3", "老周没有骂他，只是叹了口气，让阿梅拿来新的竹篾。", ["老周"], ["小虎", "阿梅"],
          [rel("老周", "小虎", "social", "neighbours", ["sympathy"]),
           rel("老周", "阿梅", "family", "relatives", ["trust"])],
          act("verbal", "tell", "work", "completed", "complication")),
    event(T, "e4", "阿梅一边安慰小虎，一边教他怎么扎灯骨。", ["阿梅"], ["小虎"],
          [rel("阿梅", "小虎", "social", "helper_helped", ["sympathy"])],
          act("emotional", "comfort", "work", "completed", "complication")),
    event(T, "e5", "夜深了，三个人一起重新糊好了十盏荷花灯。小虎提着第一盏灯跑回家，说要给奶奶看。",
          ["阿梅", "老周", "小虎"], [], [rel("小虎", "阿梅", "friendship", "companions", ["joy"])],
          act("social", "help", "work", "completed", "resolution")),
    event(T, "e6", "第二天的灯会上，老周的荷花灯得了头奖。他把奖状交给阿梅，说：“以后这铺子就交给你了。”阿梅红了眼眶，点了点头。",
          ["老周"], ["阿梅"],
          [rel("老周", "阿梅", "professional", "master_apprentice", ["pride", "trust"]),
           rel("阿梅", "老周", "family", "relatives", ["gratitude"])],
          act("physical", "give", "public", "completed", "denouement")),
])

# 2. ferry_en: complete ground truth.
FERRY = (
    "Tom Hale had kept the ferry on the Black River for thirty years. The villagers simply called him the ferryman.\n"
    "One stormy evening a girl named Lila ran down to the landing. \"Please take me across,\" she begged. "
    "\"My mother is ill on the other side.\"\n"
    "Tom looked at the swollen river and shook his head. Then he saw her soaked shoes and changed his mind.\n"
    "Halfway across, the rope snapped. Tom grabbed the oar and fought the current while Lila bailed water with her hat.\n"
    "Captain Reyes, who ran the rival steam launch, saw them from the bank. He threw them a line and pulled the ferry "
    "to shore.\n"
    "Lila thanked both men and ran to her mother's house. The next morning Tom shook hands with Reyes for the first "
    "time in ten years."
)
T = FERRY
ferry = story("The Ferryman", "en", T, [
    ch("Tom Hale", ["the ferryman", "Tom"], "hero"), ch("Lila", "the girl", "innocent"),
    ch("Captain Reyes", ["Reyes"], "ally")], [
    event(T, "e1", "One stormy evening a girl named Lila ran down to the landing. \"Please take me across,\" she begged. "
                   "\"My mother is ill on the other side.\"", ["Lila"], ["Tom Hale"],
          [rel("Lila", "Tom Hale", "social", "strangers", ["hope", "fear"])],
          act("verbal", "ask", "journey", "completed", "inciting_incident")),
    event(T, "e2", "Tom looked at the swollen river and shook his head. Then he saw her soaked shoes and changed his mind.",
          ["Tom Hale"], ["Lila"], [rel("Tom Hale", "Lila", "social", "helper_helped", ["sympathy"])],
          act("mental", "decide", "journey", "completed", "complication")),
    event(T, "e3", "Halfway across, the rope snapped. Tom grabbed the oar and fought the current while Lila bailed water "
                   "with her hat.", ["Tom Hale", "Lila"], [],
          [rel("Tom Hale", "Lila", "social", "helper_helped", ["trust"])],
          act("physical", "protect", "nature", "ongoing", "crisis")),
    event(T, "e4", "Captain Reyes, who ran the rival steam launch, saw them from the bank. He threw them a line and "
                   "pulled the ferry to shore.", ["Captain Reyes"], ["Tom Hale", "Lila"],
          [rel("Captain Reyes", "Tom Hale", "hostility", "rivals", ["respect"]),
           rel("Captain Reyes", "Lila", "social", "strangers", ["sympathy"])],
          act("physical", "protect", "nature", "completed", "climax")),
    event(T, "e5", "Lila thanked both men and ran to her mother's house.", ["Lila"], ["Tom Hale", "Captain Reyes"],
          [rel("Lila", "Tom Hale", "social", "benefactor_beneficiary", ["gratitude"]),
           rel("Lila", "Captain Reyes", "social", "benefactor_beneficiary", ["gratitude"])],
          act("verbal", "praise", "public", "completed", "resolution")),
    event(T, "e6", "The next morning Tom shook hands with Reyes for the first time in ten years.", ["Tom Hale"],
          ["Captain Reyes"], [rel("Tom Hale", "Captain Reyes", "friendship", "acquaintances", ["respect"])],
          act("social", "reconcile", "public", "completed", "denouement")),
])

# 3. orchard_zh: partial action layers ("" / null fields, an empty {}), relationships [] and null, sentiment "" and
#    null, archetype "" and null.
ORCHARD = (
    "秋天到了，林家的果园挂满了红苹果。哥哥林山每天天不亮就上山摘果，弟弟林水却总在树下睡觉。\n"
    "有一天，收购商王老板来到果园，说今年的苹果只收一半。林山急得团团转，林水却笑着说他有办法。\n"
    "林水连夜在镇上的集市摆了摊，把苹果做成果酱和果干卖给游客。\n"
    "三天后，果园里的苹果全卖完了。林山拍着弟弟的肩膀说：“原来你不是在睡觉，是在想主意。”\n"
    "王老板听说后又跑来要货，兄弟俩却笑着摇了摇头。"
)
T = ORCHARD
orchard = story("果园", "zh", T, [
    ch("林山", ["哥哥"], ""), ch("林水", ["弟弟"], "trickster"), ch("王老板", ["收购商"], None)], [
    event(T, "e1", "哥哥林山每天天不亮就上山摘果，弟弟林水却总在树下睡觉。", ["林山", "林水"], [], [],
          act("physical", "", "nature", "ongoing", "exposition")),
    event(T, "e2", "有一天，收购商王老板来到果园，说今年的苹果只收一半。", ["王老板"], ["林山", "林水"],
          [rel("王老板", "林山", "professional", "merchant_customer", "")],
          act("verbal", "tell", None, "completed", "inciting_incident")),
    event(T, "e3", "林山急得团团转，林水却笑着说他有办法。", ["林水"], ["林山"],
          [rel("林水", "林山", "family", "siblings", ["sympathy"])],
          {"category": "verbal", "type": "promise", "context": None, "status": None, "function": None}),
    event(T, "e4", "林水连夜在镇上的集市摆了摊，把苹果做成果酱和果干卖给游客。", ["林水"], [], None,
          act("physical", "make", "market", "completed", "climax")),
    event(T, "e5", "三天后，果园里的苹果全卖完了。林山拍着弟弟的肩膀说：“原来你不是在睡觉，是在想主意。”", ["林山"],
          ["林水"], [rel("林山", "林水", "family", "siblings", ["admiration", "pride"])],
          act("verbal", "praise", "nature", "completed", "resolution")),
    event(T, "e6", "王老板听说后又跑来要货，兄弟俩却笑着摇了摇头。", ["林山", "林水"], ["王老板"],
          [rel("林山", "王老板", "professional", "merchant_customer", None)], {}),
])

# 4. clockmaker_en: characters wholly missing ([]), one event without a span (null), and the prediction adds an
#    event that GT does not have.
CLOCK = (
    "In a narrow street of the old town, Mr. Arden repaired clocks that nobody else could fix. His apprentice, a quiet "
    "boy called Finn, swept the shop and watched every move of his hands.\n"
    "One winter morning the mayor brought in the great clock from the town hall. It had stopped at midnight, and the "
    "festival was only two days away.\n"
    "Arden worked through the night but could not find the fault. Exhausted, he fell asleep at the bench.\n"
    "Finn noticed a tiny pebble caught between two gears. He removed it with tweezers, and the clock began to tick.\n"
    "When Arden woke, he said nothing at first. Then he handed Finn his own old loupe and told him to open the shop "
    "the next day."
)
T = CLOCK
clock = story("The Clockmaker", "en", T, [], [
    event(T, "e1", "His apprentice, a quiet boy called Finn, swept the shop and watched every move of his hands.",
          ["Finn"], ["Mr. Arden"], [rel("Finn", "Mr. Arden", "professional", "master_apprentice", ["admiration"])],
          act("social", "help", "work", "ongoing", "exposition")),
    event(T, "e2", "One winter morning the mayor brought in the great clock from the town hall.", ["the mayor"],
          ["Mr. Arden"], [rel("the mayor", "Mr. Arden", "professional", "merchant_customer", ["trust"])],
          act("physical", "give", "work", "completed", "inciting_incident")),
    event(T, "e3", None, ["Mr. Arden"], [], [], act("physical", "search", "work", "failed", "complication")),
    event(T, "e4", "Finn noticed a tiny pebble caught between two gears. He removed it with tweezers, and the clock "
                   "began to tick.", ["Finn"], ["Mr. Arden"],
          [rel("Finn", "Mr. Arden", "professional", "master_apprentice", ["sympathy"])],
          act("physical", "make", "work", "completed", "climax")),
    event(T, "e5", "Then he handed Finn his own old loupe and told him to open the shop the next day.", ["Mr. Arden"],
          ["Finn"], [rel("Mr. Arden", "Finn", "professional", "master_apprentice", ["pride", "trust"])],
          act("physical", "give", "work", "completed", "resolution")),
])

# 5. well_zh: relationships (and so sentiment) wholly missing ([] and null), archetype "", an event without an action.
WELL = (
    "村口有一口老井，井水甜得像蜜。可是这一年大旱，井水一天比一天少。\n"
    "村长陈伯召集大家开会，决定每家每天只打两桶水。年轻的铁匠大牛不服气，半夜偷偷去井边多打了一桶。\n"
    "第二天，井水见了底。大牛看着干裂的井壁，心里又悔又怕。\n"
    "他扛起铁锹，带着几个小伙子往山里找水源。他们挖了三天三夜，终于在一块大石头下面挖出了泉眼。\n"
    "泉水顺着竹管流进老井，村里的人们围在井边，陈伯拍着大牛的背，什么也没说。"
)
T = WELL
well = story("老井", "zh", T, [ch("陈伯", ["村长"], "mentor"), ch("大牛", ["铁匠"], "")], [
    event(T, "e1", "可是这一年大旱，井水一天比一天少。", [], [], [], None),
    event(T, "e2", "村长陈伯召集大家开会，决定每家每天只打两桶水。", ["陈伯"], [], [],
          act("verbal", "tell", "public", "completed", "inciting_incident")),
    event(T, "e3", "年轻的铁匠大牛不服气，半夜偷偷去井边多打了一桶。", ["大牛"], [], None,
          act("physical", "take", "public", "completed", "complication")),
    event(T, "e4", "第二天，井水见了底。大牛看着干裂的井壁，心里又悔又怕。", ["大牛"], [], [],
          act("mental", "realise", "public", "completed", "crisis")),
    event(T, "e5", "他扛起铁锹，带着几个小伙子往山里找水源。他们挖了三天三夜，终于在一块大石头下面挖出了泉眼。", ["大牛"],
          [], [], act("physical", "search", "nature", "completed", "climax")),
    event(T, "e6", "泉水顺着竹管流进老井，村里的人们围在井边，陈伯拍着大牛的背，什么也没说。", ["陈伯"], ["大牛"], None,
          act("social", "reconcile", "public", "completed", "resolution")),
])

# 6. kite_en: spans wholly missing (key absent, {}, null, empty offsets) and action layers wholly missing.
KITE = (
    "Mia built a red kite from newspaper and bamboo sticks. Her older brother Sam laughed and said it would never fly.\n"
    "On Saturday the wind came from the sea. Mia ran along the beach, but the kite crashed into the sand again and "
    "again.\n"
    "An old fisherman named Ezra watched from his boat. He walked over and showed Mia how to tie a longer tail.\n"
    "The kite rose above the dunes and hung in the sky like a small red sun. Sam stopped laughing and asked if he "
    "could hold the string.\n"
    "Mia handed it to him, and the three of them watched the kite until the sun went down."
)
T = KITE
kite = story("The Red Kite", "en", T, [
    ch("Mia", [], "hero"), ch("Sam", ["her brother"], "everyman"), ch("Ezra", ["the fisherman"], "mentor")], [
    event(T, "e1", None, ["Sam"], ["Mia"], [rel("Sam", "Mia", "family", "siblings", ["contempt"])], None,
          span_key=False),
    event(T, "e2", {}, ["Ezra"], ["Mia"], [rel("Ezra", "Mia", "social", "helper_helped", ["sympathy"]),
                                           rel("Mia", "Ezra", "social", "helper_helped", ["gratitude"])], {}),
    event(T, "e3", None, ["Sam"], ["Mia"], [rel("Sam", "Mia", "family", "siblings", ["admiration"])], None),
    event(T, "e4", {"start": None, "end": None, "text": ""}, ["Mia"], ["Sam"],
          [rel("Mia", "Sam", "family", "siblings", ["joy"])], {"category": "", "type": "", "context": "",
                                                               "status": "", "function": ""}),
])

# 7. market_zh: labels outside the taxonomy in GT, a span whose text disagrees with its offsets, a span whose
#    offsets fall outside the text, alias as a plain string, relationships [] in the last event.
MARKET = (
    "清晨的菜市场人声鼎沸。卖豆腐的刘婶和卖鱼的老郑是二十年的老邻居，却为了一个摊位吵了整整一个月。\n"
    "这天，老郑的孙女丫丫在市场里走丢了。刘婶第一个发现她蹲在豆腐摊后面哭，连忙把她抱起来，给她擦眼泪。\n"
    "老郑满头大汗地找过来，看到孙女正捧着一碗豆花吃得香甜。他站在摊前，半天说不出话。\n"
    "刘婶把那个摊位让了出来，老郑却摆摆手，说：“还是你用吧，我挪到门口去。”\n"
    "从那以后，两家的摊子挨在一起，丫丫每天放学都来喝一碗豆花。"
)
T = MARKET
wrong_text = span(T, "刘婶第一个发现她蹲在豆腐摊后面哭，连忙把她抱起来，给她擦眼泪。") | {"text": "刘婶发现了她"}
market = story("菜市场", "zh", T, [
    ch("刘婶", "刘婶子", "caregiver"), ch("老郑", ["郑大爷"], "everyman"), ch("丫丫", [], "innocent")], [
    event(T, "e1", "卖豆腐的刘婶和卖鱼的老郑是二十年的老邻居，却为了一个摊位吵了整整一个月。", ["刘婶", "老郑"], [],
          [rel("刘婶", "老郑", "social", "neighbours", ["anger"]),
           rel("老郑", "刘婶", "social", "neighbours", ["annoyance"])],
          act("verbal", "quarrel", "market", "ongoing", "exposition")),
    event(T, "e2", "这天，老郑的孙女丫丫在市场里走丢了。", ["丫丫"], ["老郑"],
          [rel("丫丫", "老郑", "family", "grandparent_grandchild", ["fear"])],
          act("physical", "move", "market", "completed", "inciting_incident")),
    event(T, "e3", wrong_text, ["刘婶"], ["丫丫"], [rel("刘婶", "丫丫", "social", "helper_helped", ["sympathy"])],
          act("emotional", "comfort", "market", "completed", "complication")),
    event(T, "e4", {"start": 900, "end": 950, "text": "他站在摊前，半天说不出话。"}, ["老郑"], ["刘婶"],
          [rel("老郑", "刘婶", "social", "neighbours", ["gratitude", "shame"])],
          act("mental", "realise", "market", "completed", "crisis")),
    event(T, "e5", "刘婶把那个摊位让了出来，老郑却摆摆手，说：“还是你用吧，我挪到门口去。”", ["刘婶", "老郑"], [],
          [rel("刘婶", "老郑", "social", "neighbours", ["respect"]),
           rel("老郑", "刘婶", "friendship", "acquaintances", ["gratitude"])],
          act("social", "reconcile", "market", "completed", "climax")),
    event(T, "e6", "从那以后，两家的摊子挨在一起，丫丫每天放学都来喝一碗豆花。", ["丫丫"], [], [],
          act("social", "meet", "market", "ongoing", "denouement")),
])

GT = {"lantern_zh": lantern, "ferry_en": ferry, "orchard_zh": orchard, "clockmaker_en": clock, "well_zh": well,
      "kite_en": kite, "market_zh": market}


# ---------------------------------------------------------------------------------------------------------------
# Hand-made predictions: GT copies with the errors listed in README.md, one kind per edit.
def ev_of(doc: dict[str, Any], eid: str) -> dict[str, Any]:
    return next(e for e in doc["narrative_events"] if e["id"] == eid)


def predictions() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, gt in GT.items():
        p = copy.deepcopy(gt)
        p["metadata"] = {"title": gt["metadata"]["title"], "language": gt["metadata"]["language"],
                         "annotation": "hand-made prediction with deliberate errors"}
        out[name] = p
    # lantern_zh
    p, T = out["lantern_zh"], LANTERN
    p["characters"] = [ch("梅梅", [], "hero"), ch("老周", ["周师傅"], "ally"), ch("奶奶", [], "caregiver")]
    ev_of(p, "e3")["relationships"][0] |= {"relationship_level2": "strangers", "sentiment": ["anger"]}
    ev_of(p, "e4")["action_layer"] |= {"category": "social", "type": "help"}
    p["narrative_events"].remove(ev_of(p, "e5"))
    e6 = ev_of(p, "e6")
    e6["text_span"] = span(T, "他把奖状交给阿梅，说：“以后这铺子就交给你了。”阿梅红了眼眶，点了点头。")
    e6["relationships"][1] |= {"target": "周师傅", "sentiment": ["gratitude", "joy"]}
    p["narrative_events"].append(event(T, "x1", "小虎吓得直哭，说：“我不是故意的！”", ["小虎"], [], [],
                                       act("emotional", "cry", "work", "completed", "complication")))
    # ferry_en
    p, T = out["ferry_en"], FERRY
    p["characters"] = [ch("Tom", [], "mentor"), ch("Lila", [], "innocent"), ch("Reyes", [], "ally")]
    ev_of(p, "e1")["text_span"]["text"] = "A girl ran to the landing."
    ev_of(p, "e2")["text_span"] = {"start": 5000, "end": 5050, "text": "Tom looked at the swollen river"}
    ev_of(p, "e3")["relationships"] = []
    ev_of(p, "e4")["relationships"] = [rel("Reyes", "Tom", "hostility", "rivals", ["respect"]),
                                       rel("Lila", "Captain Reyes", "social", "strangers", ["fear"])]
    p["narrative_events"].remove(ev_of(p, "e5"))
    ev_of(p, "e6")["action_layer"]["status"] = "attempted"
    # orchard_zh: predictions where GT is empty (extra), and an empty prediction where GT is present (missing)
    p = out["orchard_zh"]
    p["characters"][0]["archetype"] = "hero"
    p["characters"][2]["archetype"] = "villain"
    ev_of(p, "e1")["relationships"] = [rel("林山", "林水", "family", "siblings", ["resentment"])]
    ev_of(p, "e1")["action_layer"]["type"] = "travel"
    ev_of(p, "e2")["relationships"][0]["sentiment"] = ["contempt"]
    ev_of(p, "e2")["action_layer"]["context"] = "nature"
    ev_of(p, "e3")["action_layer"]["status"] = "completed"
    ev_of(p, "e5")["relationships"][0]["sentiment"] = ""
    ev_of(p, "e6")["action_layer"] = act("verbal", "refuse", "nature", "completed", "denouement")
    # clockmaker_en: characters where GT has none, an event absent from GT, a wrong action function
    p, T = out["clockmaker_en"], CLOCK
    p["characters"] = [ch("Mr. Arden", ["Arden"], "mentor"), ch("Finn", [], "hero"), ch("the mayor", [], "herald")]
    ev_of(p, "e3")["text_span"] = span(T, "Arden worked through the night but could not find the fault.")
    ev_of(p, "e4")["action_layer"]["function"] = "resolution"
    p["narrative_events"].insert(3, event(T, "x1", "Exhausted, he fell asleep at the bench.", ["Arden"], [], [],
                                          act("physical", "sleep", "work", "completed", "complication")))
    # well_zh: relationships where GT has none, a span one sentence short (near miss), an archetype where GT is ""
    p, T = out["well_zh"], WELL
    p["characters"][1]["archetype"] = "rebel"
    ev_of(p, "e6")["relationships"] = [rel("陈伯", "大牛", "social", "neighbours", ["sympathy"])]
    ev_of(p, "e5")["text_span"] = span(T, "他们挖了三天三夜，终于在一块大石头下面挖出了泉眼。")
    # kite_en: spans and actions where GT has none; an alias as target; one wrong sentiment label
    p, T = out["kite_en"], KITE
    ev_of(p, "e1")["text_span"] = span(T, "Her older brother Sam laughed and said it would never fly.")
    ev_of(p, "e1")["action_layer"] = act("verbal", "insult", "nature", "completed", "exposition")
    ev_of(p, "e4")["relationships"][0]["target"] = "her brother"
    ev_of(p, "e3")["relationships"][0]["sentiment"] = ["surprise"]
    # market_zh: a wrong level1, a missed event
    p = out["market_zh"]
    ev_of(p, "e5")["relationships"][1]["relationship_level1"] = "social"
    p["narrative_events"].remove(ev_of(p, "e6"))
    return out


def main() -> None:
    for name, doc in GT.items():
        (HERE / "gt" / f"{name}.json").write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", "utf-8")
    for name, doc in predictions().items():
        (HERE / "pred" / f"{name}_pred.json").write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n",
                                                         "utf-8")


if __name__ == "__main__":
    main()
