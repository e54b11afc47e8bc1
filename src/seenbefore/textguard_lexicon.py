"""The injection guard's phrasing beyond English (issue 33): French, Spanish and German, and the
phrasing of any language that addresses the person reading a draft rather than a model.

:mod:`seenbefore.textguard` compiles these with its own rules (a literal space is a word gap:
whitespace, or Markdown quote and emphasis marks) and matches them on its revealed copy of the
text (NFKC, look-alikes folded, invisible characters dropped, letter-spacing collapsed). As in
English, an imperative alone is not enough: SRE prose is full of them ("redémarrer les pods",
"ignorar los 404", "ignorieren Sie die Warnung"). A pattern needs phrasing aimed at a model (an
address: "note à l'IA", "si eres una IA", "Hinweis an die KI"), at its instructions
("instructions précédentes", "instrucciones anteriores", "vorherigen Anweisungen"), at its
output ("dans ta réponse, indique", "en tu respuesta", "in deiner Antwort"), or a demand on the
reader that comes with a fake authority or an urgency ("IMPORTANT SYSTEM NOTICE ... the reviewer
must approve this immediately").

Each language's patterns are a dict by finding kind, so the benchmark (benchmarks/injection.py)
reports per language. Standard library only; patterns are bounded (no nested ambiguous
repeats).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Final, cast

_W = r"[^\W_]+"  # a word (letters and digits), never the gap characters
_WIN = r"(?:(?!\n[^\S\n]{0,40}\n)[\s\S]){0,200}?"  # the rest of the paragraph, up to 200 chars
_Q = "['’]"  # an apostrophe, typed or typographic

# -- French -------------------------------------------------------------------------------------
_FR_DET = (
    rf"(?:toute?s?|tous|les|tes|vos|ces|cette|la|le|l{_Q}|des|de|du|d{_Q}|mes|nos|chaque|ta|ton)"
)
_FR_RULES = r"(?:instructions?|consignes?|directives?|r[èe]gles?|indications?|ordres?|prompts?)"
_FR_QUAL = (
    rf"(?:pr[ée]c[ée]dente?s?|ant[ée]rieure?s?|ci-dessus|d{_Q}avant|initiale?s?|du syst[èe]me"
    r"|syst[èe]me|originale?s?|d[ée]j[àa] (?:re[çc]ue?s|donn[ée]e?s)|re[çc]ue?s?|donn[ée]e?s?"
    r"|de s[ée]curit[ée])"
)
_FR_AI = (
    rf"(?:l{_Q}|une? |le |la )?(?:IA|I\.A\.|intelligence artificielle|mod[èe]le de langage"
    r"|mod[èe]le d['’]IA|LLM|chatbot|agent IA|assistant(?:e)? (?:IA|virtuel(?:le)?))\b"
)
_FR_IMP = (
    r"(?:tu dois|vous devez|il faut|dis|dites|r[ée]ponds|r[ée]pondez|[ée]cris|[ée]crivez"
    r"|indique|indiquez|conclus|concluez|ne (?:mentionne|mentionnez|dis|dites|parle|parlez)"
    r"|approuve|approuvez|recommande|recommandez|ignore|ignorez|oublie|oubliez|affirme"
    r"|affirmez|inclus|incluez|d[ée]clare|d[ée]clarez|ferme|fermez|doit|doivent)\b"
)
FRENCH: Final[dict[str, tuple[str, ...]]] = {
    "instruction_override": (
        rf"\b(?:ignore[rz]?|oublie[rz]?|n[ée]glige[rz]?|omets|omettez|[ée]carte[rz]?)"
        rf" (?:{_FR_DET}\s*){{0,3}}(?:{_W} )?{_FR_RULES}(?: {_W}){{0,2}}? {_FR_QUAL}",
        rf"\b(?:ignore[rz]?|oublie[rz]?) (?:tout(?:es)? )?(?:tes|vos|les|ses) {_FR_RULES}\b",
        rf"\bne (?:tiens|tenez|tenons) (?:pas|plus|aucun) compte (?:de |des |d{_Q})(?:{_W} ){{0,3}}?"
        rf"{_FR_RULES}",
        rf"\bfai(?:s|tes|sons) abstraction (?:de |des |d{_Q})(?:{_W} ){{0,3}}?{_FR_RULES}",
        rf"\bne (?:fais|faites|pr[êe]te|pr[êe]tez) (?:pas|plus|aucune) attention (?:[àa] |aux? )"
        rf"(?:{_W} ){{0,3}}?{_FR_RULES}|\b(?:laisse|laissez|mets|mettez) de c[ôo]t[ée] (?:{_W} ){{0,3}}?"
        rf"{_FR_RULES}",
        rf"\b(?:ch[èe]re?|cher|salut|bonjour|coucou|h[ée]) (?:l{_Q})?(?:IA|assistante?"
        r"|mod[èe]le de langage)\s*,",
        r"\b(?:nouvelles?|vraies?|v[ée]ritables?|r[ée]elles?) (?:instructions|consignes"
        r"|directives)\s*:|\bprompt syst[èe]me\s*:",
        rf"\b(?:tu es|vous [êe]tes) (?:maintenant|d[ée]sormais|à pr[ée]sent) (?:un |une |en )?"
        rf"(?:{_W} ){{0,2}}?(?:IA|assistant|mod[èe]le|bot|agent|mode)\b",
        r"\b(?:dans|[àa] la fin de|au d[ée]but de) (?:ta|votre) (?:r[ée]ponse|synth[èe]se"
        r"|hypoth[èe]se|sortie)\s*,? (?:tu dois |vous devez |il faut )?(?:indique|indiquez|dis"
        r"|dites|[ée]cris|[ée]crivez|mentionne|mentionnez|affirme|affirmez|conclus|concluez"
        r"|inclus|incluez|ajoute|ajoutez|recommande|recommandez|r[ée]ponds|r[ée]pondez)\b",
        r"\br[ée]pond(?:s|ez) (?:uniquement|seulement|simplement) (?:par|avec|«|\"|OK)",
        rf"(?:\bnote (?:[àa]|pour) {_FR_AI}|\bsi (?:tu es|vous [êe]tes) {_FR_AI}"
        rf"|\ben tant qu{_Q}(?:IA|assistant|mod[èe]le de langage)\b|^[\t\x20>*#-]*(?:[àa] )?"
        rf"(?:l{_Q}IA|l{_Q}assistant)\s*:|\battention,? (?:[àa] |au |[àa] la )?{_FR_AI}"
        rf"|\b(?:IA|assistant|mod[èe]le de langage) qui (?:lit|lis|traite|analyse|r[ée]sume"
        rf"|re[çc]oit)\b){_WIN}\b{_FR_IMP}",
    ),
    "secret_request": (
        r"\b(?:r[ée]v[èe]le|r[ée]v[ée]lez|affiche|affichez|montre|montrez|donne|donnez|envoie"
        r"|envoyez|divulgue|divulguez|imprime|imprimez|recopie|recopiez|partage|partagez"
        r"|(?:merci de|pri[èe]re de|veuillez) (?:r[ée]v[ée]ler|afficher|montrer|donner|envoyer"
        r"|divulguer|imprimer|recopier|partager))"
        rf"(?:-(?:moi|nous))? (?:{_W} ){{0,3}}?(?:tes|vos|ton|votre|ta) (?:{_W} ){{0,2}}?"
        rf"(?:prompt|invite|instructions? (?:syst[èe]me|cach[ée]es|secr[èe]tes|internes|initiales)"
        rf"|cl[ée]s?(?: d{_Q}API| API| secr[èe]tes?)?"
        rf"|secrets?|identifiants|mots de passe|jetons?|variables d{_Q}environnement)",
    ),
}

# -- Spanish ------------------------------------------------------------------------------------
_ES_DET = r"(?:todas?|todos|las|los|tus|sus|estas|esas|la|el|de|mis|cada|tu)"
_ES_RULES = r"(?:instrucci[óo]n(?:es)?|indicaciones|directrices|reglas|[óo]rdenes|normas|prompts?)"
_ES_QUAL = (
    r"(?:anteriores|previas|precedentes|de arriba|iniciales|del sistema|originales|recibidas?"
    r"|de seguridad)"
)
_ES_AI = (
    r"(?:la |una |el |un )?(?:IA|I\.A\.|inteligencia artificial|modelo de lenguaje"
    r"|modelo de IA|LLM|chatbot|agente de IA|asistente (?:de IA|virtual))\b"
)
_ES_IMP = (
    r"(?:debes|debe|deber[áa]s|tienes que|di|diga|dile|d[íi]gale|responde|responda|escribe"
    r"|escriba|indica|indique|concluye|concluya|no (?:menciones|mencione|digas|diga|hables)"
    r"|aprueba|apruebe|recomienda|recomiende|ignora|ignore|olvida|olvide|afirma|afirme|incluye"
    r"|incluya|cierra|cierre)\b"
)
SPANISH: Final[dict[str, tuple[str, ...]]] = {
    "instruction_override": (
        r"\b(?:ignora|ignore|ignorad|ignorar|olvida|olvide|olvidad|olvidar|omite|omita|omitid"
        rf"|omitir|descarta|descarte) (?:{_ES_DET} ){{0,3}}(?:{_W} )?{_ES_RULES}(?: {_W}){{0,2}}?"
        rf" {_ES_QUAL}",
        rf"\b(?:ignora|olvida|omite|ignore|olvide|omita)r? (?:todas )?(?:tus|sus|las|los) {_ES_RULES}\b",
        rf"\bno (?:hagas|haga|hag[áa]is|hagan) caso (?:a|de) (?:{_W} ){{0,3}}?{_ES_RULES}"
        rf"|\bdeja(?:d)? de lado (?:{_W} ){{0,3}}?{_ES_RULES}|\bno sigas (?:{_W} ){{0,3}}?{_ES_RULES}",
        r"\b(?:querid[oa]|hola|estimad[oa]) (?:IA|asistente|modelo de lenguaje)\s*,",
        rf"\b(?:haz|haga|hagan|haced) caso omiso (?:de|a) (?:{_W} ){{0,3}}?{_ES_RULES}",
        r"\bnuevas (?:instrucciones|[óo]rdenes|directrices|indicaciones)\s*:"
        r"|\bprompt del sistema\s*:",
        rf"\b(?:ahora|a partir de ahora|desde ahora),? (?:eres|ser[áa]s|es usted) (?:un |una )?"
        rf"(?:{_W} ){{0,2}}?(?:IA|asistente|modelo|bot|agente|modo)\b",
        r"\b(?:en|al final de|al principio de) (?:tu|su) (?:respuesta|resumen|hip[óo]tesis"
        r"|salida)\s*,? (?:debes |debe )?(?:indica|indique|di|diga|escribe|escriba|menciona"
        r"|mencione|afirma|afirme|concluye|concluya|incluye|incluya|a[ñn]ade|a[ñn]ada|recomienda"
        r"|recomiende|responde|responda)\b",
        r"\bresponde(?:r|d)? (?:solo|solamente|[úu]nicamente) (?:con|«|\"|OK)",
        rf"(?:\bnota (?:para|a) {_ES_AI}|\bnota (?:para|a)l asistente\b|\bsi (?:eres|es usted) "
        rf"{_ES_AI}|\bsi (?:eres|es usted) (?:un )?asistente\b|\bcomo (?:IA|modelo de lenguaje"
        r"|asistente de IA)\s*,?|^[\t\x20>*#-]*(?:a la IA|al asistente)\s*:"
        rf"|\batenci[óo]n,? (?:a )?(?:la IA|al modelo|al asistente|{_ES_AI})"
        r"|\b(?:IA|modelo|asistente) que (?:lea|lee|procese|procesa|analice|analiza|resuma"
        rf"|resume)\b){_WIN}\b{_ES_IMP}",
    ),
    "secret_request": (
        r"\b(?:revela|revele|muestra|muestre|dame|d[ée]me|env[íi]a|env[íi]e|imprime|imprima"
        r"|comparte|comparta|filtra|filtre|escribe|escriba)"
        rf" (?:{_W} ){{0,3}}?(?:tus|tu|sus|su) (?:{_W} ){{0,2}}?(?:prompt|instrucciones (?:del sistema"
        r"|ocultas|secretas|internas|iniciales)"
        r"|claves?(?: de API)?|secretos?|credenciales|contrase[ñn]as|tokens?|variables de entorno)",
    ),
}

# -- German -------------------------------------------------------------------------------------
_DE_DET = (
    r"(?:alle|allen|die|der|den|deine|deinen|Ihre|Ihren|s[äa]mtliche|jegliche|jede|diese|Sie"
    r"|meine|unsere|bisher)"
)
# compounds count (Sicherheitsregeln, Systemanweisungen)
_DE_RULES = (
    r"(?:[^\W\d_]*(?:Anweisung(?:en)?|Instruktion(?:en)?|Regeln|Vorgaben|Richtlinien|Befehle"
    r"|Anordnungen|Prompts?))"
)
_DE_QUAL = r"(?:vorherigen|bisherigen|obigen|vorigen|fr[üu]heren|urspr[üu]nglichen|alten)"
_DE_AI = (
    r"(?:die |eine |das |den |dem |der |ein )?(?:KI|K\.I\.|k[üu]nstliche Intelligenz|Sprachmodell"
    r"|KI-Modell|KI-Assistent(?:en)?|LLM|Chatbot|KI-Agent(?:en)?)\b"
)
_DE_IMP = (
    r"(?:du musst|Sie m[üu]ssen|musst du|sollst du|sag|sage|sagen Sie|antworte|antworten Sie"
    r"|schreib|schreibe|schreiben Sie|gib|geben Sie|folgere|erw[äa]hne|genehmige|genehmigen Sie"
    r"|empfiehl|ignoriere|vergiss|behaupte|schlie[ßs]e|muss|m[üu]ssen)\b"
)
GERMAN: Final[dict[str, tuple[str, ...]]] = {
    "instruction_override": (
        r"\b(?:ignorier(?:e|en)?|vergiss|vergesst|vergessen Sie|missachte|missachten"
        r"|[üu]bergeh(?:e|en)|verwirf|verwerfen)"
        rf" (?:{_DE_DET} ){{0,3}}(?:{_DE_QUAL} )?(?:{_W} ){{0,2}}{_DE_RULES}\b",
        rf"\bsetze? (?:dich|euch|sich) [üu]ber (?:{_DE_DET} ){{0,3}}(?:{_DE_QUAL} )?{_DE_RULES}"
        r" hinweg\b",
        rf"\b(?:achte|achten Sie|beachte|beachten Sie|befolge|befolgen Sie) (?:nicht|nicht mehr|nie)"
        rf" (?:auf )?(?:{_DE_DET} ){{0,3}}(?:{_DE_QUAL} )?(?:{_W} )?{_DE_RULES}\b"
        rf"|\blass(?:t|en Sie)? (?:{_DE_DET} ){{0,3}}(?:{_DE_QUAL} )?{_DE_RULES} au[ßs]er Acht\b",
        r"\b(?:liebe[rs]?|hallo|hey) (?:KI|Assistent(?:in)?|Sprachmodell)\s*,",
        r"\bneue (?:Anweisungen|Instruktionen|Befehle|Vorgaben|Regeln)\s*:|\bSystemprompt\s*:",
        rf"\b(?:du bist|Sie sind) (?:jetzt|nun|ab sofort|ab jetzt) (?:ein |eine |im )?"
        rf"(?:{_W} ){{0,2}}?(?:KI|Assistent|Modell|Bot|Agent|[^\W\d_]*[Mm]odus)\b",
        r"\b(?:gib|geben Sie|schreib|schreibe|schreiben Sie|sag|sage|sagen Sie|erw[äa]hne|nenne"
        r"|f[üu]ge|empfiehl|behaupte|folgere)\b[^.\n]{0,40}\b(?:in|am (?:Anfang|Ende)) (?:deiner"
        r"|Ihrer) (?:Antwort|Ausgabe|Zusammenfassung|Hypothese)\b|\bin (?:deiner|Ihrer)"
        r" (?:Antwort|Ausgabe|Zusammenfassung),? (?:musst du|m[üu]ssen Sie|gib|schreib|sag)\b",
        r"\bantworte(?:n Sie)? (?:nur|ausschlie[ßs]lich|lediglich) (?:mit|mit \"|OK)",
        r"\bals (?:KI|Sprachmodell|KI-Assistent),? (?:musst|sollst|darfst) du\b",
        rf"(?:\bHinweis (?:an|f[üu]r) {_DE_AI}|\bHinweis an den Assistenten\b|\bwenn (?:du|Sie) "
        rf"{_DE_AI} (?:bist|sind)|\bals (?:KI|Sprachmodell|KI-Assistent)(?:\s*,| (?:musst|sollst"
        rf"|darfst|wirst) du)|^[\t\x20>*#-]*an (?:die KI|den Assistenten)\s*:|\bAchtung,? "
        rf"{_DE_AI}|\b(?:KI|Modell|Sprachmodell|Assistent),? (?:die|der|das) (?:dies|das|diesen"
        rf"|dieses) (?:{_W} )?(?:liest|verarbeitet|zusammenfasst|analysiert)\b){_WIN}\b{_DE_IMP}",
    ),
    "secret_request": (
        r"\b(?:zeig|zeige|zeigen Sie|gib|geben Sie|verrate|verraten Sie|nenne|sende|schicke"
        rf"|drucke) (?:{_W} ){{0,3}}?(?:dein|deine|deinen|deines|deiner|Ihr|Ihre|Ihren|Ihres)"
        rf" (?:{_W} ){{0,2}}?"
        r"(?:Systemprompt|System-Prompt|Prompt|Systemanweisungen|Anweisungen|(?:API-)?Schl[üu]ssel"
        r"|Geheimnisse|Zugangsdaten|Passw[öo]rter|Tokens?|Umgebungsvariablen)",
    ),
}

# -- a demand on the reader, with a fake authority or urgency (every language) ------------------
_NOTICE = (
    r"(?:\b(?:(?:important|urgent|critical|official|mandatory|final) )?(?:system|security|admin"
    r"|administrator|compliance|policy) (?:notice|message|alert|directive|override|instruction)\b"
    r"|\b(?:avis|message|alerte|notification) (?:syst[èe]me|de s[ée]curit[ée]|s[ée]curit[ée]"
    r"|officiel|administrat(?:eur|ion))\b|\bdirective (?:officielle|de conformit[ée]"
    r"|de s[ée]curit[ée])\b"
    r"|\b(?:aviso|alerta|mensaje) (?:importante )?(?:del sistema|de seguridad|oficial"
    r"|de(?:l)? administrador)\b|\bdirectiva (?:oficial|de cumplimiento|de seguridad)\b"
    r"|\b(?:System|Sicherheits|Admin|Administrator)-?(?:hinweis|meldung|warnung|nachricht)\b"
    r"|\b(?:offizielle |verbindliche )?(?:Compliance|Sicherheits|Dienst)-?Anweisung\b)"
)
_DEMAND = (
    r"(?:\b(?:you|reviewers?|approvers?|the reviewer|on-?call|operators?|everyone|engineers?)"
    r" (?:must|should|are required to|need to|have to) (?:immediately |now |urgently )?"
    r"(?:approve|accept|merge|sign off|close|dismiss|click|confirm|disable|delete|turn off)\b"
    r"|\b(?:vous devez|tu dois|doit|doivent|il faut) (?:imm[ée]diatement |maintenant )?"
    r"(?:approuver|valider|accepter|fusionner|fermer|cliquer|confirmer|d[ée]sactiver|supprimer)\b"
    r"|\b(?:debes|debe|deben|tienes que|hay que|el revisor debe|los revisores deben)"
    r" (?:aprobar|validar|aceptar|fusionar|cerrar|hacer clic|confirmar|desactivar|borrar)\b"
    rf"|\b(?:muss|m[üu]ssen|musst) (?:{_W}(?:-{_W})* ){{0,4}}?"
    r"(?:genehmigen|freigeben|akzeptieren|mergen|schlie[ßs]en|best[äa]tigen|deaktivieren"
    r"|abschalten|ausschalten|l[öo]schen)\b)"
)
# an approval in the imperative: the verb and its object here; textguard checks that it starts
# a line, sentence or clause (AT_BEFORE, on the text before it), so "reviewers approve the
# change" is no imperative
_APPROVE = (
    rf"\b(?:approve|accept|merge|sign off on) (?:this|the|that|every|all)(?: {_W}){{0,2}}? (?:draft"
    r"|change|review|request|pr|pull request|deployment|hypothesis)s?\b"
    rf"|\bapprouve[rz]? (?:ce|cette|le|la|les|tous les)(?: {_W}){{0,2}}? (?:brouillon|changement"
    r"|modification|demande|revue)s?\b"
    rf"|\baprueb(?:a|e|en|ad) (?:este|esta|el|la|los|las|todas? las?)(?: {_W}){{0,2}}? (?:borrador"
    r"|cambio|solicitud|revisi[óo]n|revisiones)\b"
    rf"|\bgenehmige(?:n Sie)? (?:diesen|diese|den|die|das|alle)(?: {_W}){{0,2}}? (?:Entwurf"
    r"|[ÄA]nderung|Anfrage|Review)s?\b"
)
AT_BEFORE: Final = (
    r"(?:^|[.!?:;>*(\[\"'`-])[\t\x20]*$|\b(?:please|now|just|simply|s['’]il vous pla[îi]t"
    r"|por favor|bitte)\s+$"
)
_UNCHECKED = (
    r"(?:immediately|right now|without (?:review|reviewing|checking|reading|delay|question)"
    r"|imm[ée]diatement|sans (?:relecture|v[ée]rification|d[ée]lai|examen)|de inmediato"
    r"|inmediatamente|sin (?:revisi[óo]n|revisar|comprobar|demora)|sofort|ohne (?:Pr[üu]fung"
    r"|Review|zu pr[üu]fen|Verz[öo]gerung))"
)
READER: Final[dict[str, tuple[str, ...]]] = {
    "instruction_override": (
        r"\b(?:new|updated|revised|real) (?:system )?instructions (?:follow|below|are as follows)\b",
        # English beyond textguard's own patterns: more ways to set a model's rules aside
        rf"\b(?:pay no attention|do not pay attention|don't pay attention|stop paying attention)"
        rf" to (?:{_W} ){{0,3}}?(?:instructions|guidance|guidelines|rules|directives|prompts?)\b",
        r"\b(?:forget|ignore|disregard|drop|set aside) (?:all |the |any )?(?:rules|instructions"
        r"|guidance|guidelines) (?:you (?:were|have been|'ve been) (?:given|told)|given to you)\b",
        r"\b(?:ignore|disregard|forget|override|bypass) (?:every|each|any|all) (?:single )?"
        r"(?:instruction|rule|directive|prompt|guideline)s?\b",
        rf"\b(?:ignore|disregard|forget|override|bypass) (?:all (?:of )?)?(?:your|all|any)"
        rf" (?:{_W} )?(?:rules|safety rules|guardrails|restrictions|filters)\b",
        rf"\byou(?:'re| are) now (?:in )?(?:{_W} ){{0,2}}?(?:mode|AI|assistant|model|bot|agent)\b",
        # a task or role said to have changed, in any of the four languages
        r"\b(?:your|ta|tu|votre|deine|Ihre) (?:task|t[âa]che|tarea|Aufgabe|role|r[ôo]le|rol|Rolle"
        r"|instructions|mission|misi[óo]n|job) (?:has|have|a|ha|hat) (?:(?:now|maintenant|ahora"
        r"|jetzt) )?(?:changed|chang[ée]e?|cambiado|sich ge[äa]ndert|ge[äa]ndert)\b",
        # everything before declared void, in any of the four languages
        r"\b(?:treat|consider|regard|consid[èe]re|considerez|consid[ée]rez|considera|considere"
        r"|betrachte|betrachten Sie) (?:everything|all|anything|tout ce qui pr[ée]c[èe]de|tout"
        r"|todo lo anterior|todo|alles(?: oben| Vorherige| bisherige)?)(?: above| before| so far"
        r"| earlier)? (?:as |comme |como |als )?(?:obsolete|void|invalid|outdated|cancell?ed"
        r"|obsol[èe]te|nul|caduc|obsoleto|nulo|inv[áa]lido|[üu]berholt|ung[üu]ltig|hinf[äa]llig)",
        # text addressed to a model by label, or to any automated reader, in any of the four
        r"^[\t\x20>*#-]*(?:model|mod[èe]le|modelo|modell|LLM|bot|agent|agente)\s*:[\t\x20]*"
        r"(?:treat|consider|ignore|disregard|forget|say|write|answer|respond|reply|recommend|mark"
        r"|approve|consid[èe]re|ignore|oublie|dis|[ée]cris|r[ée]ponds|recommande|marque|approuve"
        r"|considera|ignora|olvida|di|escribe|responde|recomienda|marca|aprueba|betrachte"
        r"|ignoriere|vergiss|sag|schreib|antworte|empfiehl|markiere|genehmige)\b",
        r"\((?:to|for|[àa]|pour|a|para|an|f[üu]r) (?:any|every|all|the|tout|toute|tous les"
        r"|cualquier|todo|todos los|jeden|jede|alle|den|die) (?:automated |automatic |automatique"
        r" |autom[áa]tico |automatischen |AI |IA |KI )?(?:summari[sz]ers?|r[ée]sumeurs?"
        r"|resumidor(?:es)?|Zusammenfasser|readers?|lecteurs?|lector(?:es)?|Leser|assistants?"
        r"|models?|mod[èe]les?|modelos?|Modell(?:e)?|agents?|agentes?|bots?|LLMs?|AI|IA|KI)"
        r"(?: automatiques?| autom[áa]ticos?| IA| de IA)?\)",
    ),
}
# A demand on the reader is flagged with an urgency right after it (UNCHECKED, in the next
# UNCHECKED_CHARS of its sentence) or a fake notice in the same paragraph, at most PAIR_CHARS
# apart (either first). textguard matches them apart and pairs them, so no pattern scans a
# window from every position.
NOTICE: Final = _NOTICE
DEMAND: Final = _DEMAND
APPROVE: Final = _APPROVE
UNCHECKED: Final = _UNCHECKED
UNCHECKED_CHARS: Final = 60
PAIR_CHARS: Final = 200

LANGUAGES: Final[dict[str, dict[str, tuple[str, ...]]]] = {
    "fr": FRENCH,
    "es": SPANISH,
    "de": GERMAN,
    "reader": READER,
}
# Which patterns run on a text is decided from its words (one pass, then set lookups): a
# language's patterns only where one of its common short words or letters occurs (a hostile
# sentence in it always holds some; most English postmortems hold none), and each pattern that
# runs on every text only where one of its trigger words does. Triggers are exact words, or
# prefixes written with a trailing "*"; text is casefolded first.


@dataclass(frozen=True)
class Trigger:
    words: frozenset[str]
    prefixes: tuple[str, ...] = ()
    letters: frozenset[str] = frozenset()

    @classmethod
    def of(cls, spec: str, letters: str = "") -> Trigger:
        items = spec.split()
        return cls(
            frozenset(i for i in items if not i.endswith("*")),
            tuple(i[:-1] for i in items if i.endswith("*")),
            frozenset(letters),
        )

    def hit(self, words: frozenset[str], chars: frozenset[str]) -> bool:
        return bool(
            self.words & words
            or self.letters & chars
            or (self.prefixes and any(w.startswith(self.prefixes) for w in words))
        )


GATES: Final[dict[str, Trigger]] = {
    "fr": Trigger.of(
        "les des une est pour dans avec cette vous votre sont ces qui nous tes ton aux pas la le"
        " de du tu ta vos toute toutes tous chaque que ce ici mon ma mes son sa ses merci veuillez"
        " ne et qu jusqu lorsqu",
        "àâçéèêëîïôûœÀÉÈÊÇ",
    ),
    "es": Trigger.of(
        "las los del para una que con por eres debes como esta este ahora tus sus la de el al"
        " toda todas todos cada hasta muy pero ya tu mi mis se lo le les y o favor",
        "ñáíóú¿¡ÑÁÍÓÚ",
    ),
    "de": Trigger.of(
        "der das und ist nicht mit dem den des ein eine einen du deine dein deinen deines deiner"
        " wenn auf für sich jetzt sind wird oder alle sie ihre hinweis zu neue jede jeden jedes"
        " bisher bitte mir mich ich wir nur noch auch schon sehr kein keine im vom zum zur",
        "äöüßÄÖÜ",
    ),
    "reader": Trigger(frozenset(), ("",)),  # per pattern: READER_TRIGGERS
}
READER_TRIGGERS: Final[tuple[Trigger, ...]] = (
    Trigger.of("instructions"),
    Trigger.of("attention"),
    Trigger.of("given told"),
    Trigger.of("ignore disregard forget override bypass"),
    Trigger.of("ignore disregard forget override bypass"),
    Trigger.of("now"),
    Trigger.of("changed change cambiado geändert geandert changé changée"),
    Trigger.of(
        "obsolete void invalid outdated cancelled canceled obsolète nul caduc obsoleto nulo"
        " inválido invalido überholt uberholt ungültig ungultig hinfällig hinfallig"
    ),
    Trigger.of("model modèle modele modelo modell llm bot agent agente"),
    Trigger.of(
        "summar* résum* resum* zusammenfass* reader readers lecteur* lector* leser assist*"
        " model* modèl* agent* bot bots llm llms ai ia ki"
    ),
)
DEMAND_TRIGGER: Final = Trigger.of(
    "must should required need needs have doit doivent devez dois faut debes debe deben tienes"
    " hay muss müssen musst approve* accept merge sign approuv* aprueb* genehmig*"
)
STEERING_TRIGGER: Final = Trigger.of(
    "you your yourself tu toi ton ta tes vous votre vos tú tus te ti usted ustedes vosotros os"
    " du dich dir dein* euch euer eure* ai ia ki llm* gpt chatbot* summari* résum* resum*"
    " zusammenfass* assistant* asistente* assistent* going henceforth désormais dorénavant"
    " partir adelante ahora jetzt nun sofort künftig kunftig writing drafting answering lors"
    " redactar schreiben"
)
_WORD: Final = re.compile(r"[^\W\d_]+")


def words_of(clean: str) -> tuple[frozenset[str], frozenset[str]]:
    """The casefolded words of ``clean``, and its non-ASCII characters (for the gates)."""
    folded = clean.casefold()
    return frozenset(_WORD.findall(folded)), frozenset(ch for ch in clean if ord(ch) > 127)


# -- letter-spaced text ---------------------------------------------------------------------------
# A run such as "i g n o r e p r e v i o u s" has no word gaps left; its letters, run together
# (lower case, accents removed), are searched for a verb of dismissal and a word for the rules.
SPACED_VERBS: Final = (
    "ignore",
    "disregard",
    "forget",
    "override",
    "bypass",
    "oublie",
    "olvida",
    "omite",
    "ignora",
    "vergiss",
    "missachte",
    "ignoriere",
    "reveal",
    "revele",
    "revela",
)
SPACED_TARGETS: Final = (
    "instruction",
    "prompt",
    "rules",
    "guidelines",
    "consigne",
    "regle",
    "directive",
    "instruccion",
    "reglas",
    "anweisung",
    "regeln",
    "vorgaben",
    "systemprompt",
)


def squash(text: str) -> str:
    """Letters only, lower case, accents removed: ``p r é c é d e n t`` -> ``precedent``."""
    decomposed = unicodedata.normalize("NFD", text.casefold())
    return "".join(ch for ch in decomposed if ch.isalpha() and unicodedata.category(ch) != "Mn")


def spaced_instruction(run: str) -> bool:
    """Whether a letter-spaced run, run together, dismisses or asks for instructions."""
    letters = squash(run)
    return any(v in letters for v in SPACED_VERBS) and any(t in letters for t in SPACED_TARGETS)


class _Lazy:
    """A pattern compiled on its first use: the guard holds a few hundred long patterns, and
    compiling them all at import cost a fifth of a second on every command, searches included,
    that never scans a text."""

    __slots__ = ("_compiled", "_source")

    def __init__(self, source: str) -> None:
        self._source = source
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source, re.IGNORECASE | re.MULTILINE)
        return getattr(compiled, name)


def rx(pattern: str) -> re.Pattern[str]:
    """Compile (on first use); each literal space means a word gap: whitespace (line breaks too)
    or Markdown quote and emphasis marks. Inside a character class, patterns write a space as
    ``\\x20``."""
    return cast("re.Pattern[str]", _Lazy(pattern.replace(" ", r"[\s>*_]+")))


_NOTICE_RX: Final = rx(NOTICE)
_DEMAND_RX: Final = rx(DEMAND)
_APPROVE_RX: Final = rx(APPROVE)
_AT_BEFORE_RX: Final = rx(AT_BEFORE)
_UNCHECKED_RX: Final = rx(UNCHECKED)
_SENTENCE_TAIL: Final = re.compile(rf"[^.\n]{{0,{UNCHECKED_CHARS}}}")
PARAGRAPH: Final = re.compile(r"\n[^\S\n]{0,40}\n")


def _posted(notice: re.Match[str]) -> bool:
    """A notice posted as one (its words in capitals, or a label: a colon, dash or '!' after
    them), not one that prose mentions ("the system notice said ...")."""
    letters = [ch for ch in notice[0] if ch.isalpha()]
    after = notice.string[notice.end() : notice.end() + 3].lstrip()
    return all(ch.isupper() for ch in letters) or after[:1] in (":", "!", "-", "—", "–")


def demands_on_the_reader(
    clean: str, words: tuple[frozenset[str], frozenset[str]] | None = None
) -> list[tuple[int, int]]:
    """Spans of a demand on the reader ("you must approve", "approve this draft") that comes
    with an urgency right after it ("... immediately", "without review") or a posted notice in
    the same paragraph, at most PAIR_CHARS apart ("IMPORTANT SYSTEM NOTICE: ... the reviewer
    must approve this")."""
    if not DEMAND_TRIGGER.hit(*(words or words_of(clean))):
        return []
    demands = [m.span() for m in _DEMAND_RX.finditer(clean)] + [
        m.span()
        for m in _APPROVE_RX.finditer(clean)
        if _AT_BEFORE_RX.search(clean[max(0, m.start() - 30) : m.start()])
    ]
    if not demands:
        return []
    notices = [m.span() for m in _NOTICE_RX.finditer(clean) if _posted(m)]
    found = []
    for d_start, d_end in demands:
        tail = _SENTENCE_TAIL.match(clean, d_end)
        urgent = _UNCHECKED_RX.search(tail[0]) if tail else None
        if urgent:
            found.append((d_start, d_end + urgent.end()))
        for n_start, n_end in notices:
            lo, hi = min(n_start, d_start), max(n_end, d_end)
            gap = clean[min(n_end, d_end) : max(n_start, d_start)]
            if len(gap) <= PAIR_CHARS and not PARAGRAPH.search(gap):
                found.append((lo, hi))
    return found


# -- a sentence that steers the output, in any of the four languages ------------------------------
# Not one phrase but a combination: a verb that shapes what a draft or a model says (describe,
# omit, replace, claim, recommend ...), with an address to an automated reader, or "while
# summarising", or the reader ("you", "tu", "du") together with the output, the rules or a turn
# in time ("from now on"), or the output together with such a turn. Each part alone is ordinary
# SRE prose ("you can reproduce it", "the summary", "our model").
_STEER = (
    r"\b(?:describe|omit|replace|answer|respond|reply|claim|state|say|write|recommend|conclude"
    r"|mark|approve|report|present|blame|reveal|print|output|mention|include|summari[sz]e"
    r"|treat|consider|insist|pretend|d[ée]cri(?:s|vez|re)|omet(?:s|tez|tre)|remplace[zr]?"
    r"|r[ée]pond(?:s|ez|re)|affirme[zr]?|dis|dites|dire|[ée]cri(?:s|vez|re)|recommande[zr]?"
    r"|conclu(?:s|ez|re)|marque[zr]?|approuve[zr]?|pr[ée]sente[zr]?|accuse[zr]?|divulgue[zr]?"
    r"|r[ée]v[èe]le[zr]?|mentionne[zr]?|inclu(?:s|ez|re)|r[ée]sume[zr]?|consid[èe]re[zr]?"
    r"|pr[ée]tends|describ(?:e|a|id|ir)(?:lo|la)?|omit(?:e|a|id|ir)|reemplaza[dr]?"
    r"|sustitu(?:ye|ya|id|ir)|respond(?:e|a|ed|er)|contesta[dr]?|afirma[dr]?|di|dile|d[íi]gale"
    r"|escrib(?:e|a|id|ir)(?:lo|la)?|escr[íi]belo|recomienda|recomendar|conclu(?:ye|ya|ir)"
    r"|marca[dr]?|aprueba|aprobar|presenta[dr]?|culpa[dr]?|filtra[dr]?|revela[dr]?"
    r"|menciona[dr]?|inclu(?:ye|ya|ir)|resum(?:e|a|ir)|considera[dr]?|finge|beschreib\w*"
    r"|weg(?:lassen|zulassen)|lass\w* \w+ weg|ersetz\w*|antworte\w*|behaupte\w*|sag(?:e|en|t)?"
    r"|schreib(?:e|en|t)?|empfiehl|empfehlen|folger\w*|markier\w*|genehmig\w*|darstellen"
    r"|darzustellen|beschuldig\w*|preis|verrat\w*|erw[äa]hn\w*|betracht\w*)\b"
)
_AUTOMATION = (
    r"\b(?:AI|IA|KI|LLMs?|GPT|chatbots?|summari[sz]ers?|r[ée]sumeurs?|resumidor(?:es)?"
    r"|Zusammenfasser|(?:AI|IA|KI)[- ]?(?:agents?|agentes?|Agenten|assistants?|asistentes?"
    r"|Assistent(?:en)?|models?|mod[èe]les?|modelos?|Modell(?:e)?)|agents? (?:IA|de IA)"
    r"|l['’]assistant|al asistente|den Assistenten|the assistant)\b"
)
_SECOND = (
    r"\b(?:you|your|yourself|tu|toi|ton|ta|tes|vous|votre|vos|t[úu]|tus|te|ti|usted|ustedes"
    r"|vosotros|os|du|dich|dir|dein\w*|euch|euer|eure\w*)\b"
)
_OUTPUT = (
    r"\b(?:hypothes[ie]s|summary|answer|response|draft|report|post-?mortem|root cause|mitigations"
    r"|hypoth[èe]se|r[ée]sum[ée]|r[ée]ponse|brouillon|rapport|cause racine|hip[óo]tesis|resumen"
    r"|respuesta|borrador|informe|causa ra[íi]z|Hypothese|Zusammenfassung|Antwort|Entwurf"
    r"|Bericht|Ursache)\b"
)
_META = (
    r"\b(?:instructions?|guidelines|rules|guardrails|prompts?|consignes?|directives?|r[èe]gles"
    r"|instrucci[óo]n(?:es)?|directrices|reglas|Anweisung(?:en)?|Richtlinien|Regeln|Vorgaben)\b"
)
_TURN = (
    r"\b(?:going forward|from now on|from here on|henceforth|d[ée]sormais|dor[ée]navant"
    r"|[àa] partir de maintenant|de ahora en adelante|a partir de ahora|desde ahora|ab jetzt"
    r"|von nun an|ab sofort|k[üu]nftig)\b"
)
_WHILE_OUTPUT = (
    r"\b(?:when|while|as you) (?:summari[sz]ing|you summari[sz]e|writing|drafting|answering)"
    r"|\blors du r[ée]sum[ée]|\ben r[ée]sumant|\bal resumir|\bal redactar|\bbeim (?:Zusammenfassen"
    r"|Schreiben)\b"
)
_STEER_RX: Final = rx(_STEER)
_PARTS_RX: Final = {
    name: rx(pattern)
    for name, pattern in (
        ("automation", _AUTOMATION),
        ("second", _SECOND),
        ("output", _OUTPUT),
        ("meta", _META),
        ("turn", _TURN),
        ("while", _WHILE_OUTPUT),
    )
}
_SENTENCES: Final = re.compile(r"[^.!?;\n]+")


def steering_sentences(
    clean: str, words: tuple[frozenset[str], frozenset[str]] | None = None
) -> list[tuple[int, int]]:
    """Spans of sentences that steer the output (the rule above this function)."""
    if not STEERING_TRIGGER.hit(*(words or words_of(clean))):
        return []
    found = []
    for m in _SENTENCES.finditer(clean):
        sentence = m[0]
        if len(sentence) < 12 or not _STEER_RX.search(sentence):
            continue
        has = {name for name, part in _PARTS_RX.items() if part.search(sentence)}
        if (
            has & {"automation", "while"}
            or ("second" in has and has & {"output", "meta", "turn"})
            or {"output", "turn"} <= has
        ):
            found.append(m.span())
    return found
