"""The final-answer citation check: ids, sentences, support, enforcement — examples and properties."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcp_server.grounding.sentences import cited_ids, split_sentences
from mcp_server.grounding.support import supports
from mcp_server.grounding.verdict import UNSUPPORTED_MARK, check_answer, enforce

HANDBOOK = Path(__file__).resolve().parents[3] / "corpora" / "handbook"

# Evidence as the bundled handbook and demo database phrase it.
VPN = "handbook:it/vpn-troubleshooting#1"
LEAVE = "handbook:hr/leave-policy#2"
EXPENSE = "handbook:zh/expense-policy#1"
REFUNDS = "sql:company:1a2b3c4d"
EVIDENCE = {
    VPN: (
        "The client shows ERR_VPN_AUTH_4012 when your device certificate has expired. Device certificates "
        "are valid for 12 months. E1042 means the tunnel did not come up within 30 seconds."
    ),
    LEAVE: (
        "Your line manager approves or declines requests for up to 5 consecutive working days, normally "
        "within 2 working days. Leave of more than 5 consecutive working days also needs the approval of "
        "your department director. Days not taken by 31 March expire and are not paid out."
    ),
    EXPENSE: "所有费用应在费用发生后30天内通过报销系统提交。单笔金额超过5000元的费用，还需部门总监审批。",
    REFUNDS: "SELECT strftime('%Y-%m', refunded_on) AS month, COUNT(*) AS refunds FROM refunds GROUP BY month\n"
    "month | refunds\n2025-08 | 11\n2025-09 | 17",
}


# --------------------------------------------------------------------------- cited ids


def test_cited_ids_reads_single_grouped_and_adjacent_brackets_in_order() -> None:
    answer = (
        "A [handbook:hr/leave-policy#2, handbook:hr/leave-policy#3]. B [sql:company:1a2b3c4d; x:y#1]"
        "[handbook:hr/leave-policy#2][products:x3/manual-v2.0#7]."
    )
    assert cited_ids(answer) == [
        "handbook:hr/leave-policy#2",
        "handbook:hr/leave-policy#3",
        "sql:company:1a2b3c4d",
        "x:y#1",
        "products:x3/manual-v2.0#7",
    ]


def test_ids_may_be_wrapped_in_backticks() -> None:
    assert cited_ids("A [`handbook:hr/leave-policy#2`; `sql:company:1a2b3c4d`].") == [
        "handbook:hr/leave-policy#2",
        "sql:company:1a2b3c4d",
    ]


@pytest.mark.parametrize("text", ["See [1].", "At [10:00] sharp.", "[see above: the table]", "[a link](https://x.example)", "[]"])
def test_brackets_that_are_not_citation_ids_are_ignored(text: str) -> None:
    assert cited_ids(text) == []


@pytest.mark.parametrize("text", ["[Note: see #2]", "[Step 1: do it #3]", "[10:30 meeting#2]", "[see: #2]", "[x: y#1]"])
def test_bracketed_notes_with_a_colon_and_a_number_are_not_citations(text: str) -> None:
    assert cited_ids(f"The drill is on Thursday {text}.") == []


FIRE_DRILL = "mydocs:Fire%20drill%20on%20Thursday#0"
FIRE_DRILL_TEXT = "The fire drill starts on Thursday at 10:15 and ends at the north gate."


@pytest.mark.parametrize(
    "cited",
    [
        FIRE_DRILL,
        "mydocs:Fire drill on Thursday#0",  # the file name unescaped
        "`mydocs:Fire drill on Thursday#0`",
        "mydocs:Fire%20drill on%20Thursday#0",
        "mydocs:Fire%20drill%20on%20Thursday#0, mydocs:Q3, facilities#1",  # the second file name has a comma
        "mydocs:Q3, facilities#1; mydocs:Fire drill on Thursday#0",
        "mydocs:Fire drill on Thursday#0;",
    ],
)
def test_a_file_name_with_spaces_or_commas_is_cited_escaped_or_as_it_is(cited: str) -> None:
    evidence = {FIRE_DRILL: FIRE_DRILL_TEXT, "mydocs:Q3%2C%20facilities#1": "The Q3 facilities budget is 12,000 EUR."}
    check = check_answer(f"The fire drill starts on Thursday at 10:15 [{cited}].", evidence)
    assert check.passed and check.sentences[0].status == "supported", check.to_dict()
    assert FIRE_DRILL in check.sentences[0].citations


# --------------------------------------------------------------------------- sentences


@pytest.mark.parametrize(
    ("answer", "sentences"),
    [
        ("Revenue was 2.8 million. Costs fell.", ["Revenue was 2.8 million.", "Costs fell."]),
        ("Use a soft brush, e.g. a toothbrush. Then rinse.", ["Use a soft brush, e.g. a toothbrush.", "Then rinse."]),
        ("Upgrade to v2.0 first. It fixes E1042.", ["Upgrade to v2.0 first.", "It fixes E1042."]),
        ("See No. 5 in the list. Done.", ["See No. 5 in the list.", "Done."]),
        ("Open https://selfservice.wonderlab.example. Renew it.", ["Open https://selfservice.wonderlab.example.", "Renew it."]),
        ("It takes 150 minutes. [a:b#1] Next step [a:b#2].", ["It takes 150 minutes. [a:b#1]", "Next step [a:b#2]."]),
        ("It takes 150 minutes.[a:b#1][a:c#2] Next.", ["It takes 150 minutes.[a:b#1][a:c#2]", "Next."]),
        ("Read [products:x3/manual-v2.0#7]. Then stop.", ["Read [products:x3/manual-v2.0#7].", "Then stop."]),
        ("Really? Yes! Fine.", ["Really?", "Yes!", "Fine."]),
        ("报销单应在30天内提交。[handbook:zh/x#1]超过90天不予报销！是吗？", ["报销单应在30天内提交。[handbook:zh/x#1]", "超过90天不予报销！", "是吗？"]),
        (
            "Steps:\n- Open the portal\n- Renew it. Restart.\n1. First\n2) Second",
            ["Steps:", "Open the portal", "Renew it.", "Restart.", "First", "Second"],
        ),
        ("## Leave\nText here", ["Leave", "Text here"]),
        ("The bonus is paid on\n31 December [a:b#1].", ["The bonus is paid on\n31 December [a:b#1]."]),
        ("A line without a stop\nAnother line", ["A line without a stop", "Another line"]),
        ("```\ncode line\n```\nAfter.", ["code line", "After."]),
    ],
)
def test_split_sentences(answer: str, sentences: list[str]) -> None:
    assert split_sentences(answer) == sentences


# --------------------------------------------------------------------------- support


@pytest.mark.parametrize(
    ("sentence", "cited"),
    [
        ("The plan costs 1,999 a year.", "The plan costs 1999 per year."),
        ("The plan costs ¥1,999 a year.", "The plan costs 1999 yuan per year."),
        ("The plan costs 1999 a year.", "The plan costs ¥1,999 per year."),
        ("Prices rose 10% this year.", "This year prices rose by 10 percent."),
        ("Revenue reached 2.8 million euros.", "Revenue reached 2.8M euros."),
        ("Revenue reached 2.8M euros.", "Revenue reached 2.8 million euros."),
        ("Revenue reached 2.8 million euros.", "Revenue reached 2,800,000 euros."),
        ("Revenue reached 2.80 million euros.", "Revenue reached 2.8 million euros."),
        ("The X3 filter needs cleaning.", "Clean the filter of the X3 weekly."),
        ("Error 4012 means the certificate expired.", "ERR_VPN_AUTH_4012: certificate expired."),
        ("Change CHG-2025-0612-03 caused the outage.", "The outage was caused by change CHG-2025-0612-03."),
        ("Requests need 5 working days notice.", "Requests need five working days of notice."),
        ("After 1 year you get 10 days.", "After one year of service you get 10 days."),
        ("Requests need five working days notice.", "Requests need 5 working days of notice."),
        ("Carried-over days expire after 31 March.", "Days not taken by 31 March expire."),
        ("There were 17 refunds in September 2025.", "month | refunds\n2025-09 | 17"),
        ("报销单需要在费用发生后30天内提交。", "所有费用应在费用发生后30天内通过报销系统提交。"),
    ],
)
def test_numbers_and_codes_are_found_in_their_other_spellings(sentence: str, cited: str) -> None:
    support = supports(sentence, cited)
    assert support.supported, support


@pytest.mark.parametrize(
    ("sentence", "cited", "numbers", "terms"),
    [
        ("The tunnel times out after 150 minutes.", "The tunnel times out after 120 minutes.", ["150"], []),
        ("Revenue reached 2.9 million euros.", "Revenue reached 2.8 million euros.", ["2.9million"], []),
        (
            "ERR_VPN_AUTH_4013 means the certificate expired.",
            "ERR_VPN_AUTH_4012 means the certificate expired.",
            [],
            ["ERR_VPN_AUTH_4013"],
        ),
        ("The X9 battery lasts long.", "The X3 battery lasts long.", [], ["X9"]),
        ("Unused days expire at the end of June.", "Unused days expire at the end of March.", [], ["June"]),
        ("报销单需要在费用发生后60天内提交。", "所有费用应在费用发生后30天内通过报销系统提交。", ["60"], []),
    ],
)
def test_a_sentence_whose_numbers_or_codes_differ_is_not_supported(
    sentence: str, cited: str, numbers: list[str], terms: list[str]
) -> None:
    support = supports(sentence, cited)
    assert not support.supported
    assert support.missing_numbers == numbers
    assert support.missing_codes == terms


def test_key_terms_must_mostly_appear() -> None:
    paraphrase = supports(
        "Leave of more than five working days needs your department director's approval.", EVIDENCE[LEAVE]
    )
    unrelated = supports("Employees get free gym membership and lunch vouchers.", EVIDENCE[LEAVE])
    chinese = supports("员工可以申请免费的健身房会员。", EVIDENCE[EXPENSE])
    assert paraphrase.supported and paraphrase.coverage >= 0.75
    assert not unrelated.supported and {"gym", "lunch", "vouchers"} <= set(unrelated.missing_terms)
    assert not chinese.supported and "健身" in chinese.missing_terms


def test_citation_brackets_in_the_sentence_are_not_claims() -> None:
    assert supports("Certificates are valid for 12 months [handbook:it/vpn#3].", EVIDENCE[VPN]).supported


# --------------------------------------------------------------------------- check_answer


def test_a_fully_supported_answer_passes() -> None:
    answer = (
        f"Device certificates are valid for 12 months [{VPN}]. Leave of more than 5 consecutive working days "
        f"also needs your department director's approval [{LEAVE}].\n"
        f"- 报销单需要在费用发生后30天内提交。[{EXPENSE}]\n"
        f"- There were 17 refunds in September 2025 [{REFUNDS}]."
    )
    check = check_answer(answer, EVIDENCE)
    assert check.passed, check.feedback()
    assert (check.factual, check.supported, check.unsupported, check.uncited) == (4, 4, 0, 0)


def test_a_fabricated_id_fails_and_is_named_verbatim() -> None:
    answer = f"Device certificates are valid for 12 months [{VPN}, handbook:it/vpn-troubleshooting#9]."
    check = check_answer(answer, EVIDENCE)
    assert not check.passed
    assert check.unknown_ids == ["handbook:it/vpn-troubleshooting#9"]
    assert check.sentences[0].problems == [
        "cites unknown id handbook:it/vpn-troubleshooting#9 (not returned by any tool in this run)"
    ]
    assert "handbook:it/vpn-troubleshooting#9" in check.feedback()


def test_a_number_that_differs_from_the_cited_text_fails() -> None:
    check = check_answer(f"Device certificates are valid for 24 months [{VPN}].", EVIDENCE)
    assert check.sentences[0].status == "unsupported"
    assert check.sentences[0].problems == ["number 24 not in the cited text"]
    assert '"Device certificates are valid for 24 months' in check.feedback()
    assert "number 24 not in the cited text" in check.feedback()


def test_numbers_may_come_from_several_citations_of_one_sentence() -> None:
    answer = f"Certificates last 12 months and directors approve leave over 5 days [{VPN}][{LEAVE}]."
    assert check_answer(answer, EVIDENCE).passed
    assert not check_answer(f"Certificates last 12 months and directors approve leave over 5 days [{VPN}].", EVIDENCE).passed


def test_sql_rows_support_counts_and_wrong_counts_fail() -> None:
    good = check_answer(f"There were 17 refunds in September 2025 [{REFUNDS}].", EVIDENCE)
    wrong_count = check_answer(f"There were 19 refunds in September 2025 [{REFUNDS}].", EVIDENCE)
    wrong_month = check_answer(f"There were 17 refunds in October 2025 [{REFUNDS}].", EVIDENCE)
    assert good.passed
    assert wrong_count.sentences[0].problems == ["number 19 not in the cited text"]
    assert wrong_month.sentences[0].problems == ['key terms "October" not in the cited text']


@pytest.mark.parametrize(
    "sentence",
    [
        "Which office do you mean, Berlin or Shanghai?",
        "Do you mean the 2024 or the 2025 policy?",
        "I could not find the X9's battery life in the knowledge base.",
        "The knowledge base does not say how long the X9's battery lasts.",
        "No source mentions a gym membership.",
        "Here is what I found:",
        "Annual leave:",
        "## Details",
        "**Summary**",
        "Sure.",
        "Hope this helps!",
        "知识库中没有关于X9电池的信息。",
    ],
)
def test_questions_statements_about_the_evidence_and_headings_need_no_citation(sentence: str) -> None:
    check = check_answer(sentence, EVIDENCE)
    assert check.passed, check.feedback()
    assert check.factual == 0


@pytest.mark.parametrize(
    "sentence",
    [
        "I could not find the 2025 figures, but there were 40 refunds.",
        "Annual leave is 20 days:",
        "## 2024 results",
        "Certificates expire on 2024-05-01.",
        "报销单需要在费用发生后30天内提交。",
    ],
)
def test_a_sentence_with_a_number_needs_a_citation_whatever_its_form(sentence: str) -> None:
    check = check_answer(sentence, EVIDENCE)
    assert check.sentences[0].problems == ["no citation"]


def test_a_statement_about_the_evidence_may_not_cite_a_fabricated_id() -> None:
    check = check_answer("The knowledge base does not say more [handbook:made/up#1].", EVIDENCE)
    assert check.sentences[0].factual is False
    assert check.unknown_ids == ["handbook:made/up#1"]
    assert not check.passed


def test_to_dict_is_json_ready_and_counts_match() -> None:
    answer = f"Certificates are valid for 12 months [{VPN}]. They renew every 6 months. Gym is free [{LEAVE}]."
    check = check_answer(answer, EVIDENCE)
    data = json.loads(json.dumps(check.to_dict()))
    assert (data["passed"], data["factual"], data["supported"], data["uncited"], data["unsupported"]) == (False, 3, 1, 1, 1)
    assert [c["status"] for c in data["checks"]] == ["supported", "uncited", "unsupported"]
    assert data["checks"][2]["support"]["missing_terms"] == ["Gym", "free"]


# --------------------------------------------------------------------------- enforce


ENFORCE_ANSWER = (
    "Here is what I found:\n"
    f"- Device certificates are valid for 12 months [{VPN}].\n"
    f"- Certificates are renewed every 6 months [{VPN}].\n"
    f"Leave over 5 consecutive working days needs the department director [{LEAVE}, made:up#1]. "
    "Directors answer within 1 day. Days not taken by 31 March expire "
    f"[{LEAVE}].\n"
    "The gateway is in Munich [made:up#2]."
)


def test_enforce_remove_deletes_exactly_the_failing_sentences_and_fabricated_ids() -> None:
    check = check_answer(ENFORCE_ANSWER, EVIDENCE)
    enforced = enforce(ENFORCE_ANSWER, check, "remove")
    assert enforced.answer == (
        "Here is what I found:\n"
        f"- Device certificates are valid for 12 months [{VPN}].\n"
        f"Leave over 5 consecutive working days needs the department director [{LEAVE}]. "
        f"Days not taken by 31 March expire [{LEAVE}].\n"
    )
    assert enforced.removed == [
        f"Certificates are renewed every 6 months [{VPN}].",
        "Directors answer within 1 day.",
        "The gateway is in Munich [made:up#2].",
    ]
    assert enforced.stripped_ids == ["made:up#1"]
    assert json.loads(json.dumps(enforced.to_dict())) == {
        "mode": "remove", "removed": enforced.removed, "marked": [], "stripped_ids": ["made:up#1"]
    }
    assert check_answer(enforced.answer, EVIDENCE).passed


def test_enforce_mark_flags_failing_sentences_and_keeps_the_rest_verbatim() -> None:
    check = check_answer(ENFORCE_ANSWER, EVIDENCE)
    enforced = enforce(ENFORCE_ANSWER, check, "mark")
    assert enforced.answer == (
        "Here is what I found:\n"
        f"- Device certificates are valid for 12 months [{VPN}].\n"
        f"- {UNSUPPORTED_MARK} Certificates are renewed every 6 months [{VPN}].\n"
        f"Leave over 5 consecutive working days needs the department director [{LEAVE}]. "
        f"{UNSUPPORTED_MARK} Directors answer within 1 day. Days not taken by 31 March expire "
        f"[{LEAVE}].\n"
        f"{UNSUPPORTED_MARK} The gateway is in Munich."
    )
    assert enforced.stripped_ids == ["made:up#1", "made:up#2"]
    assert "made:up" not in enforced.answer


def test_enforce_refuses_a_check_of_another_answer() -> None:
    with pytest.raises(ValueError, match="run the check on this answer"):
        enforce("Something else.", check_answer("An answer.", EVIDENCE), "remove")


# --------------------------------------------------------------------------- properties

WORDS = (
    "leave policy approval director manager portal certificate tunnel gateway refund invoice salary "
    "bonus rating employee request working office Berlin Wonderlab quarterly expires renewed"
).split()
IDS = st.builds(
    lambda corpus, doc, chunk: f"{corpus}:{doc}#{chunk}",
    st.sampled_from(["handbook", "products", "incidents"]),
    st.builds(lambda folder, name, n: f"{folder}/{name}-{n}", st.sampled_from(["hr", "it", "x3", "zh"]),
              st.sampled_from(["leave-policy", "manual", "vpn", "nginx"]), st.integers(0, 99)),
    st.integers(0, 60),
)
NUMBERS = st.one_of(
    st.integers(0, 10**7).map(str),
    st.integers(1000, 10**7).map(lambda n: f"{n:,}"),
    st.decimals(min_value=0, max_value=10_000, places=2, allow_nan=False, allow_infinity=False).map(str),
    st.builds(lambda n: f"{n} million", st.decimals(min_value=1, max_value=99, places=1)),
    st.integers(1, 100).map(lambda n: f"{n}%"),
)
TOKENS = st.one_of(
    st.sampled_from(WORDS),
    NUMBERS,
    st.sampled_from(["X3", "ERR_VPN_AUTH_4012", "CHG-2025-0612-03", "v2.0", "e.g.", "2024-05-01", "13:00", "March"]),
    st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=6),
)
SENTENCES = st.builds(
    lambda first, rest, end: " ".join([first.capitalize(), *rest]) + end,
    st.sampled_from(WORDS),
    st.lists(TOKENS, min_size=1, max_size=10),
    st.sampled_from([".", "!", "。"]),
)
CITED_TEXTS = st.lists(SENTENCES, min_size=1, max_size=6).map(" ".join)


def _handbook_sections() -> list[tuple[str, str]]:
    """(citation id, text) for every section of the bundled handbook's Markdown documents."""
    sections = []
    for path in sorted(HANDBOOK.rglob("*.md")):
        body = path.read_text(encoding="utf-8").split("---", 2)[2]
        doc = path.relative_to(HANDBOOK).with_suffix("").as_posix()
        sections += [(f"handbook:{doc}#{n}", part) for n, part in enumerate(re.split(r"\n(?=## )", body))]
    return sections


SECTIONS = _handbook_sections()


@given(CITED_TEXTS, IDS, st.data())
def test_sentences_copied_verbatim_from_the_cited_text_always_pass(text: str, cid: str, data: st.DataObject) -> None:
    sentence = data.draw(st.sampled_from(split_sentences(text)))
    check = check_answer(f"{sentence} [{cid}]", {cid: text})
    assert check.passed, check.feedback()


@given(st.sampled_from(SECTIONS), st.data())
def test_handbook_sentences_copied_verbatim_pass(section: tuple[str, str], data: st.DataObject) -> None:
    cid, text = section
    sentence = data.draw(st.sampled_from(split_sentences(text)))
    check = check_answer(f"{sentence} [{cid}]", {cid: text})
    assert check.passed, check.feedback()


@given(CITED_TEXTS)
def test_splitting_a_sentence_again_gives_the_sentence(text: str) -> None:
    for sentence in split_sentences(text):
        assert split_sentences(sentence) == [sentence]


@given(CITED_TEXTS, IDS, IDS, st.data())
def test_a_fabricated_id_always_fails_and_is_named(text: str, real: str, fake: str, data: st.DataObject) -> None:
    assume(fake != real)
    sentences = split_sentences(text)
    target = data.draw(st.integers(0, len(sentences) - 1))
    together = data.draw(st.booleans())
    parts = [
        f"{s} [{real}, {fake}]" if i == target and together else f"{s} [{fake}]" if i == target else f"{s} [{real}]"
        for i, s in enumerate(sentences)
    ]
    check = check_answer(" ".join(parts), {real: text})
    assert not check.passed
    assert check.unknown_ids == [fake]
    assert fake in check.feedback()
    assert fake not in cited_ids(enforce(" ".join(parts), check, "remove").answer)


@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), NUMBERS, IDS, st.sampled_from(["", "I could not find it: "]))
def test_a_sentence_with_a_number_and_no_citation_always_fails(
    words: list[str], number: str, cid: str, lead: str
) -> None:
    sentence = f"{lead}{' '.join(words)} {number} {words[0]}."
    check = check_answer(sentence, {cid: f"{' '.join(words)} {number}"})
    assert "no citation" in check.sentences[-1].problems
    assert not check.passed
    assert sentence not in enforce(sentence, check, "remove").answer


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(["minutes", "days", "EUR", "refunds"]), IDS)
def test_a_number_different_from_the_cited_one_fails(cited: int, claimed: int, unit: str, cid: str) -> None:
    assume(cited != claimed)
    evidence = {cid: f"The tunnel gives up after {cited} {unit} on every gateway."}
    check = check_answer(f"The tunnel gives up after {claimed} {unit} [{cid}].", evidence)
    assert check.sentences[0].problems == [f"number {claimed} not in the cited text"]


NUMBER_IN_PROSE = re.compile(r"(?<![\w.,:/-])\d+(?![\w.,:/-]|[.,]\d)")


@settings(max_examples=200)
@given(st.sampled_from(SECTIONS), st.integers(100, 999_999), st.data())
def test_changing_a_supported_sentences_number_makes_it_fail(
    section: tuple[str, str], replacement: int, data: st.DataObject
) -> None:
    cid, text = section
    candidates = [s for s in split_sentences(text) if NUMBER_IN_PROSE.search(s) and not s.endswith(("?", "？"))]
    assume(candidates)
    assume(str(replacement) not in text and f"{replacement:,}" not in text)
    sentence = data.draw(st.sampled_from(candidates))
    assert check_answer(f"{sentence} [{cid}]", {cid: text}).passed
    changed = NUMBER_IN_PROSE.sub(str(replacement), sentence, count=1)
    check = check_answer(f"{changed} [{cid}]", {cid: text})
    assert f"number {replacement} not in the cited text" in check.sentences[0].problems


@given(st.lists(st.tuples(st.booleans(), SENTENCES), min_size=1, max_size=8), IDS)
def test_enforce_removes_exactly_the_failing_sentences(plan: list[tuple[bool, str]], cid: str) -> None:
    """Supported sentences cite the text they were copied from; the others state an uncited number."""
    cited = " ".join(sentence for good, sentence in plan if good)
    parts = [f"{s} [{cid}]" if good else f"The refund took {n + 1000003} days." for n, (good, s) in enumerate(plan)]
    answer = "\n".join(parts)
    check = check_answer(answer, {cid: cited})
    enforced = enforce(answer, check, "remove")
    assert enforced.removed == [part for part, (good, _) in zip(parts, plan) if not good]
    assert enforced.answer.rstrip("\n") == "\n".join(part for part, (good, _) in zip(parts, plan) if good)
    assert check_answer(enforced.answer, {cid: cited}).passed
