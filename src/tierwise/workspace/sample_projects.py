"""The sample workspace's projects: each one's words, people, facts, phases and task titles.

Pure data for :mod:`tierwise.workspace.sample` (written as in :mod:`tierwise.workspace.sample_text`:
``|``-separated lists, task lines ``Title``, ``Title *weekly`` or ``Parent > Sub one; Sub two``).
Each project has its own vocabulary, so that a search for it finds it; no calendar months are named.
"""

from __future__ import annotations

from tierwise.workspace.sample_text import project_text

__all__ = ["PROJECTS"]

PROJECTS = (
    project_text(
        "Q4 Product Launch|q4-product-launch|active|-27|64",
        tags="launch|enterprise|ai-automation|q4|marketing",
        descriptions="Ship the Q4 release: AI workflow automation, real-time collaboration and the analytics "
        "dashboard, with API docs, webhooks and launch marketing.|The biggest release of the year: workflow "
        "automation with LLM agents, collaboration and analytics, launched at the annual conference.",
        summaries="Launching new AI-powered features for enterprise customers with focus on workflow "
        "automation.",
        overview="The Q4 launch represents our biggest feature release of 2024, introducing three major "
        "capabilities:\n\n1. Intelligent workflow automation using custom LLM agents\n2. Real-time "
        "collaboration features with presence indicators\n3. Advanced analytics dashboard with predictive "
        "insights\n\nKey stakeholders include Product, Engineering, Marketing, and Customer Success teams. "
        "The launch is timed to align with our annual conference, so the public date cannot move; scope "
        "can.|Design partners have used the automation beta for six weeks. The features work; what is "
        "missing is everything around them: public API docs, webhooks for integrators, pricing, enablement "
        "and the story.",
        goals="Launch all three capabilities to enterprise customers by the conference keynote|Convert 25 "
        "design-partner accounts to the Enterprise plan within 60 days of launch|Public API docs and "
        "webhooks live at launch so integrators are not blocked|Keep p95 automation run latency under 4 "
        "seconds at 10x current load|Sales and customer success trained on the new features a week before "
        "launch",
        people="Priya Nair — engineering manager, owns delivery|Tomás Reis — backend lead, webhooks and "
        "API|Ana Lima — design lead, dashboard and docs portal|Jordan Blake — product marketing, launch "
        "narrative|Sam Okafor — customer success, design partners|Leo Martins — CTO, final go/no-go",
        decisions="Webhooks ship with at-least-once delivery; exactly-once is out of scope for Q4|Docs "
        "portal is built on Next.js 14 and MDX, replacing the old Docusaurus site|The analytics dashboard "
        "launches as a beta behind a flag for the first four weeks|Automation is an Enterprise add-on, not "
        "part of the Team plan|The launch blog post and demo videos go out the morning of the keynote",
        questions="Do we gate the LLM agents by region for EU data residency?|Who owns webhook support "
        "tickets after launch: customer success or the platform team?|Is the predictive insights model good "
        "enough without the next data refresh?|Should the Go SDK wait for v1.1?",
        risks="Webhook retry storms could hammer customer endpoints; we need per-endpoint rate limits|Demo "
        "videos depend on a stable staging build that keeps slipping|Algolia DocSearch approval for the docs "
        "portal can take two weeks|The conference slot is fixed: any slip means launching without the "
        "keynote",
        phases="Planning: scope, pricing and launch narrative agreed|Build: features, webhooks and docs "
        "portal complete on staging|Beta: design partners on the new features, bugs triaged daily|Launch: "
        "keynote, blog posts, demo videos and changelog go live|Post-launch: adoption review and the first "
        "follow-up",
        tasks="Design API documentation portal > Set up Next.js documentation site; Write authentication and "
        "rate limiting guides; Integrate Swagger UI API explorer; Configure Algolia DocSearch|Implement "
        "webhook system > Design webhook event schema; Build retry queue with exponential backoff; Add "
        "HMAC-SHA256 signature verification; Build delivery log and replay UI|Create demo videos|Write blog "
        "posts|Update changelog|Finalize Enterprise add-on pricing > Model revenue for three price points; "
        "Review pricing with Leo and sales; Update pricing page copy|Prepare keynote demo script|Train sales "
        "team on workflow automation|Write customer success playbook for the launch|Run load test at 10x "
        "automation volume|Fix presence indicator flicker in collaboration|Ship analytics dashboard beta "
        "flag|Draft launch email to design partners|Collect three customer quotes for the press kit|Set up "
        "launch-day war room channel|Review EU data residency for LLM agents|Write Python SDK "
        "quickstart|Write JavaScript SDK quickstart|Publish Go SDK preview|Weekly launch status update "
        "*weekly|Prepare go/no-go checklist|Record product walkthrough for support|Localize launch page into "
        "Portuguese and Spanish|Write launch FAQ for support",
        facts="Design partners asked for webhooks more than any other feature in the beta survey.|The "
        "staging environment has been unstable since the queue migration; Tomás is on it.|Marketing needs "
        "final screenshots ten days before the keynote.|Enterprise buyers expect SSO and audit logs to be "
        "mentioned in every launch asset.|The analytics dashboard reads from the new events pipeline, which "
        "is still in beta.|Jordan wants one hero story: a customer who cut manual approvals by 60%.|Support "
        "asked for a one-page FAQ before anything goes public.|The changelog is the source of truth for what "
        "shipped; blog posts link to it.",
        notes="meeting: Launch sync — scope cut decisions|meeting: Design partner call: webhook "
        "feedback|idea: Interactive changelog filtered by product area|research: How competitors document "
        "webhooks|reference: Launch day runbook|meeting: Go/no-go criteria with Leo",
        meetings="Launch sync|Webhook design review|Demo video recording|Go/no-go review|Docs portal "
        "walkthrough",
    ),
    project_text(
        "Website Redesign|website-redesign|active|-40|45",
        tags="website|design|seo|brand|webflow",
        descriptions="Rebuild the marketing site on the new brand: faster pages, clearer pricing and a demo "
        "request flow that converts.|Move the marketing site from Gatsby to Webflow with new messaging, a "
        "simpler pricing page and a four-field demo form.",
        summaries="The marketing site is slow (mobile LCP 4.1 s) and still on the old brand. We are "
        "rebuilding it in Webflow with new messaging, a simplified pricing page and a shorter demo form, "
        "aiming to double demo requests without losing organic traffic.",
        overview="Our marketing site has not been touched since the rebrand. Pages are slow on mobile, the "
        "pricing page confuses buyers (three plans, eleven add-ons) and the demo form asks nine questions. "
        "The redesign moves the site from the custom Gatsby build to Webflow so marketing can ship without "
        "engineering.|Scope is the homepage, product pages, pricing, customers and the demo flow. The blog "
        "and the docs are out of scope; docs move to the new portal from the Q4 launch.",
        goals="Largest Contentful Paint under 2 seconds on mobile for every top-20 page|Demo request "
        "conversion from 1.8% to 3.5% of visitors|No more than a 5% dip in organic traffic during the "
        "migration|Marketing can publish a landing page without a developer|A pricing page a buyer "
        "understands in under a minute",
        people="Ana Lima — design lead, owns the visual system|Jordan Blake — marketing, owns copy and "
        "SEO|Nadia Costa — Webflow developer, contractor three days a week|Sam Okafor — customer success, "
        "feeds customer stories|Leo Martins — signs off on how pricing is presented",
        decisions="Webflow over a headless CMS: speed of marketing edits beats flexibility|The demo form is "
        "cut to four fields; Clearbit enrichment fills the rest|Pricing shows two plans plus Enterprise; "
        "add-ons move to a comparison table|Illustrations are replaced with product screenshots after the "
        "user tests",
        questions="Do we keep the customer logo wall or switch to three case studies?|Who maintains the "
        "Webflow component library after Nadia's contract ends?|Should the pricing page show annual prices "
        "by default?|Is a chat widget worth its page-weight cost?",
        risks="301 redirects are easy to get wrong, and SEO loss is slow to notice|Copy approvals with Leo "
        "take about a week per round|Nadia's contract ends before launch if we slip more than two weeks|The "
        "new brand fonts are heavy and may blow the performance budget",
        phases="Discovery: analytics review, five user tests and a sitemap|Design: wireframes, visual design "
        "and component library in Figma|Build: Webflow build, redirects and CMS collections|Launch: QA, "
        "redirect check, DNS switch and monitoring",
        tasks="Audit top 20 pages in Google Search Console|Write new homepage copy > Draft hero headline "
        "options; Write product section copy; Review copy with Jordan|Design pricing page wireframes|Build "
        "Webflow component library > Set up typography and colour tokens; Build navigation and footer "
        "components; Build pricing table component|Map 301 redirects for every old URL|Subset brand fonts to "
        "cut page weight|Run five user tests on the new pricing page|Replace illustrations with product "
        "screenshots|Set up demo form enrichment with Clearbit|Write three customer case studies|QA the site "
        "on Safari and Android Chrome|Set up Plausible analytics goals|Migrate customer logos and "
        "testimonials|Plan DNS switch and rollback|Check Core Web Vitals after launch|Review Webflow CMS "
        "collections with Nadia|Website status notes for the team *weekly|Decide on the chat widget|Write "
        "meta descriptions for product pages|Create Open Graph images",
        facts="The current site's mobile LCP is 4.1 seconds; the budget is 2 seconds.|Seven of the top "
        "twenty pages by organic traffic are old blog posts, not product pages.|In user tests, four of five "
        "buyers could not say which plan includes SSO.|Nadia works Tuesday to Thursday, so Webflow reviews "
        "go on those days.|The demo form loses 62% of visitors at the 'company size' field.|The redirect map "
        "is a shared spreadsheet with 340 rows.|Webflow's CMS limits are fine for now; the blog stays on "
        "Ghost.",
        notes="meeting: Website kickoff with Ana and Jordan|research: Pricing page user tests — five buyers|"
        "reference: Redirect map rules and exceptions|idea: ROI calculator on the pricing page|meeting: "
        "Webflow build review",
        meetings="Website design review|Copy review with Jordan|Webflow build check-in|Pricing page user "
        "test",
    ),
    project_text(
        "Hiring: Senior Backend Engineer|hiring-senior-backend-engineer|active|-21|50",
        tags="hiring|recruiting|backend|team",
        descriptions="Hire a senior backend engineer for the platform team to own webhooks, queues and the "
        "public API after the Q4 launch.|One senior Python/Postgres engineer for the platform team, hired "
        "through a structured interview loop with a pairing session.",
        summaries="We need one senior backend engineer (Python, Postgres, distributed queues) by the end of "
        "the quarter. Pipeline: 48 applicants, 9 screens, 4 in technical interviews. A pairing session "
        "replaced the take-home; the offer budget is approved up to the top of band L4.",
        overview="The platform team is three people and Tomás is carrying webhooks, the queue migration and "
        "on-call. This hire takes ownership of the public API and event delivery so Tomás can focus on the "
        "data pipeline. Remote within three hours of Lisbon time; we sponsor relocation if wanted.|We moved "
        "to a structured loop: recruiter screen, hiring-manager call, pairing on a real queue bug, system "
        "design and a values interview. Every interviewer fills in the scorecard in Ashby within 24 hours.",
        goals="A signed offer within eight weeks of opening the role|A diverse onsite slate, not just "
        "whoever applied first|Every candidate gets a decision within five working days of the final "
        "interview|The new hire ships a webhook fix in their first 30 days|Interview load under four hours a "
        "week per engineer",
        people="Inês Duarte — recruiter, runs the pipeline and scheduling|Tomás Reis — backend lead, pairing "
        "interviewer|Priya Nair — engineering manager, hiring manager|Leo Martins — CTO, final interview and "
        "offer approval|Kai Schmidt — staff engineer, system design interviewer",
        decisions="A pairing session on a sanitized queue bug replaces the take-home|The salary band is in "
        "the job post, as the EU pay transparency rules require|Candidates outside three hours of Lisbon "
        "time are declined at the screen|Two interviewers must agree on a strong yes before an offer",
        questions="Do we open a second, mid-level role if we find two strong candidates?|Is a referral bonus "
        "worth adding for this role?|Can the system design interview use our real webhook architecture?|Who "
        "buddies the new hire during the first month?",
        risks="Two top candidates have competing offers that expire in about two weeks|Interviewer fatigue: "
        "Tomás does five hours of interviews a week on top of the launch|Few applicants have real queue "
        "experience|Relocation paperwork for non-EU candidates can take three months",
        phases="Sourcing: job post, referrals and outreach|Interviewing: screens, pairing, system design and "
        "values|Offer: references, offer call and negotiation|Onboarding: 30-day plan and a buddy",
        tasks="Rewrite job post with the salary band|Review new applications in Ashby *weekdays|Screen "
        "candidate: Daniela Ferreira|Screen candidate: Marcus Webb|Run pairing interview with Aisha "
        "Karimi|Write scorecard for Joost van Dijk|Calibrate scorecards with interviewers > Collect last "
        "round's scorecards; Draft rubric changes; Run a 30-minute calibration session|Prepare system design "
        "question on webhooks|Source 15 candidates on LinkedIn|Ask the team for referrals in #general|Check "
        "references for the finalist|Prepare offer for the finalist > Confirm band with Leo; Draft offer "
        "letter; Schedule the offer call|Draft 30-day onboarding plan|Order laptop and accounts for the new "
        "hire|Send rejection emails with feedback|Hiring pipeline review with Inês *weekly|Book interviewer "
        "training session|Write a buddy guide for new hires|Post the role on Landing.jobs and Otta",
        facts="The pipeline has 48 applicants, 9 screened and 4 in technical interviews.|Aisha has a "
        "competing offer that expires at the end of next week.|Pairing sessions run 75 minutes on a "
        "sanitized copy of last year's queue retry bug.|The approved band tops out at L4; going above needs "
        "Leo and the CFO.|Candidates rated the old take-home as the worst part of our process.|Inês "
        "schedules interviews in the afternoons to protect engineers' mornings.|Ashby is the source of "
        "truth; late scorecards get a reminder after 24 hours.",
        notes="meeting: Hiring sync with Inês and Priya|reference: Interview loop and scorecard "
        "rubric|journal: Interviews are eating my mornings|meeting: Debrief: Aisha Karimi|idea: Public "
        "engineering blog to help sourcing",
        meetings="Candidate interview|Hiring debrief|Pipeline review with Inês|Offer call prep",
    ),
    project_text(
        "Mobile App v2|mobile-app-v2|paused|-90|120",
        tags="mobile|react-native|offline|roadmap",
        descriptions="Rebuild the mobile app in React Native with offline approvals and push notifications. "
        "Paused until the Q4 launch ships.|One React Native app for iOS and Android, focused on approving "
        "workflow steps on the go; on hold while the team is on the launch.",
        summaries="Mobile v2 replaces the two native apps with one React Native app built around approvals "
        "on the go: an offline queue, push notifications and biometric login. Paused after the design phase "
        "so the team could focus on the Q4 launch; a restart is planned for next quarter.",
        overview="Field managers approve workflow steps from their phones, and the current native apps are "
        "two codebases that are always a release apart. v2 consolidates on React Native with Expo and "
        "narrows the app to what people actually do on mobile: approve, comment and check status.|The "
        "project is paused. Design is done and validated; the engineering estimate was 14 weeks for two "
        "engineers. Before restarting we need to re-check that estimate against the new events pipeline.",
        goals="One codebase for iOS and Android, released together|Approve a workflow step in under 10 "
        "seconds from a push notification|Approvals work offline and sync when the connection returns|App "
        "Store rating from 3.6 to 4.5|Crash-free sessions above 99.5%",
        people="Priya Nair — engineering manager|Ana Lima — design lead, owns the mobile design system|Hugo "
        "Almeida — mobile engineer, iOS background|Mei Chen — mobile engineer, Android background|Sam Okafor "
        "— customer success, brings field-manager feedback",
        decisions="React Native with Expo over Flutter: the team already knows TypeScript|Scope is "
        "approvals, comments and status; no workflow editing on mobile|The offline queue uses SQLite on the "
        "device, with conflict resolution on the server|Pause the project until the Q4 launch is out",
        questions="Does an offline approval need a second confirmation when it syncs late?|Do we keep the "
        "old apps in the stores during migration, or force-update?|Is biometric login enough for enterprise "
        "security reviews, or do we need MDM support?|Can push reuse the web app's notification service?",
        risks="The estimate is five months old and predates the events pipeline|Hugo and Mei are on the "
        "launch team; a restart depends on them being free|Apple review of enterprise features can add "
        "weeks|Offline conflict resolution is the riskiest part and has no prototype yet",
        phases="Discovery: field-manager interviews and usage analytics|Design: flows, prototype and "
        "usability tests|Build: React Native app, offline queue and push|Rollout: beta with design partners, "
        "then the store release",
        tasks="Re-estimate v2 scope against the events pipeline|Prototype offline approval queue > Spike "
        "SQLite sync on the device; Design conflict resolution rules; Test on a flaky network|Write restart "
        "proposal for leadership|Review usability test recordings|Decide force-update strategy for the old "
        "apps|Set up Expo project and CI|Design push notification payloads|Check MDM requirements with two "
        "enterprise customers|Archive old native app tickets|Define crash-free session metric in Sentry|Plan "
        "beta with design partners > Pick five beta accounts; Write the beta invitation; Set up TestFlight "
        "and the internal testing track|Document the biometric login flow|Sync with Sam on field-manager "
        "feedback|Benchmark React Native list performance|Write App Store listing copy|Review analytics: top "
        "mobile actions|Update the mobile roadmap doc|Check accessibility of approval screens",
        facts="80% of mobile sessions are approvals; the rest is mostly checking status.|The iOS and Android "
        "apps are on different versions, 4.2 and 4.0.|Field managers often approve from warehouses with poor "
        "signal.|Ana's prototype tested well: 7 of 8 users approved a step in under 10 seconds.|The old apps "
        "have a 3.6 rating, mostly complaints about login.|The project was paused on purpose; nothing is "
        "late, it is waiting for people.",
        notes="research: Field manager interviews — summary|meeting: Mobile v2 pause decision|idea: Approve "
        "from the lock screen with actionable notifications|reference: Offline sync design sketch",
        meetings="Mobile v2 restart planning|Offline sync spike review|Usability test readout",
    ),
    project_text(
        "Customer Research Q4|customer-research-q4|active|-30|35",
        tags="research|customers|interviews|discovery",
        descriptions="Twelve interviews with operations leaders on how approvals get stuck, to decide what "
        "comes after the Q4 launch.|A discovery round with customers and prospects: approval bottlenecks, "
        "reporting pain and spreadsheet workarounds.",
        summaries="Discovery round with 12 operations leaders (6 customers, 6 prospects) on approval "
        "bottlenecks and reporting. Output: an opportunity map and a ranked list of bets for next half. "
        "Seven interviews are done; synthesis starts when the last one is in.",
        overview="We know what the Q4 launch delivers; we do not know what comes after it. This research "
        "round asks operations leaders where approvals get stuck, what they report to their bosses, and what "
        "they build in spreadsheets because our product cannot.|Interviews are 45 minutes, recorded with "
        "consent, transcribed in Dovetail and tagged with a shared codebook. Sam recruits customers; "
        "prospects come from Jordan's demo pipeline.",
        goals="Twelve interviews, balanced between customers and prospects|An opportunity map the whole "
        "product team can read in ten minutes|Three ranked bets for next half with evidence behind each|A "
        "reusable interview guide and codebook for future rounds",
        people="Sam Okafor — customer success, recruits customers|Jordan Blake — marketing, brings prospects|"
        "Ana Lima — design, co-interviewer and synthesis|Rita Sousa — UX researcher, part-time, owns the "
        "codebook|Leo Martins — wants the readout before planning",
        decisions="Interview operations leaders, not end users, this round|Dovetail for transcripts and "
        "tagging|A €50 donation to a charity of their choice instead of gift cards|Synthesis is a one-day "
        "workshop, not async",
        questions="Are spreadsheet workarounds a sign of missing features or missing training?|Do prospects "
        "and customers describe the same bottlenecks?|Should reporting become its own product area?|How do we"
        " share raw clips without exposing customer names?",
        risks="Recruiting prospects is slow; three have cancelled already|Confirmation bias: we want to hear "
        "that automation is the answer|The readout lands close to planning, so late findings may be ignored|"
        "Interview fatigue for Sam's accounts right after the launch beta",
        phases="Plan: research questions, guide and recruiting|Interview: twelve sessions, notes within 24 "
        "hours|Synthesize: tagging, affinity mapping and the opportunity map|Share: readout, clips and "
        "recommended bets",
        tasks="Finalize interview guide v2|Recruit three more prospects|Interview: Northwind Logistics ops "
        "lead|Interview: Helio Health operations|Interview: Brightline Retail|Interview: Kestrel "
        "Manufacturing|Tag transcripts in Dovetail > Tag interviews 1-4; Tag interviews 5-8; Tag interviews "
        "9-12|Send thank-you notes and donations|Update the codebook with new themes|Plan the synthesis "
        "workshop > Book a room with whiteboards; Print quotes for affinity mapping; Invite Ana, Rita and "
        "Sam|Draft the opportunity map|Write the research readout for leadership|Cut a highlight reel of "
        "clips|Rank three bets for next half|Check consent forms are stored|Share interim findings in "
        "#product|Research sync with Rita *weekly|Archive the research repository",
        facts="Seven of twelve interviews are done; five are scheduled over the next two weeks.|Five of "
        "seven interviewees keep a spreadsheet next to our product to track approvals.|'I chase people on "
        "Slack all day' came up in four interviews, almost word for word.|Reporting to leadership takes ops "
        "leads three to five hours every Monday.|Prospects mention audit trails more often than customers "
        "do.|Dovetail transcripts need a manual pass for Portuguese names.",
        notes="research: Interview notes — Northwind Logistics|research: Emerging themes after seven "
        "interviews|meeting: Research planning with Rita|idea: Monday report generator|research: Interview "
        "notes — Helio Health",
        meetings="Customer interview|Research sync with Rita|Synthesis workshop",
    ),
    project_text(
        "Team Offsite|team-offsite|completed|-75|-20",
        tags="team|offsite|events|culture",
        descriptions="Two-day product and engineering offsite in Sintra: strategy, planning and time "
        "together. Done; the follow-ups are tracked here.|The Sintra offsite for 18 people: product "
        "principles, a draft roadmap and a new on-call rotation.",
        summaries="18 people, two days in Sintra. Outcomes: agreed product principles, a draft H1 roadmap "
        "and a new on-call rotation. Spent €14,200 of €15,000. Survey score 4.6 out of 5; the follow-up "
        "actions are mostly done.",
        overview="The offsite brought product, design and engineering together for the first time since the "
        "team doubled. Day one was strategy and product principles; day two was planning, and a long walk up "
        "to the Pena palace that everyone still talks about.|The project stays open only for follow-ups: the "
        "roadmap draft, the on-call rotation and the retro on the event itself.",
        goals="Five product principles everyone can quote|A draft H1 roadmap with an owner per bet|An "
        "on-call rotation that stops burning out the platform team|Stay within a €15,000 budget|Everyone "
        "leaves knowing people outside their squad",
        people="Priya Nair — co-organizer, engineering side|Marta Gomes — office manager, venue and "
        "travel|Leo Martins — opened day one with the strategy talk|Ana Lima — ran the principles workshop",
        decisions="Sintra over Porto: shorter travel for the Lisbon majority|No laptops in the morning "
        "sessions|On-call becomes a weekly rotation across six engineers|The roadmap draft stays a draft "
        "until the customer research readout",
        questions="Every six months or once a year?|Were two days enough, or should it be three with a free "
        "afternoon?|How do remote people join the next one without travel costs exploding?",
        risks="Follow-ups fade once the energy is gone; two actions still have no owner|The roadmap draft "
        "could be read as a commitment before the research readout",
        phases="Plan: venue, agenda and travel|Run: two days in Sintra|Follow up: actions, survey and retro",
        tasks="Book the venue in Sintra|Send travel details to attendees|Plan the day one agenda > Draft the "
        "strategy session outline; Prepare the product principles workshop; Book dinner for 18|Order team "
        "T-shirts|Collect dietary requirements|Run the post-offsite survey|Write the offsite summary for the "
        "company|Reimburse travel expenses|Publish the on-call rotation|Share the product principles poster|"
        "Retro on the offsite format|Turn the roadmap draft into a planning doc|Thank Marta with a gift card|"
        "Upload photos to the shared drive|Decide the next offsite date|Assign owners to orphan action items|"
        "Plan the day two planning session > Prepare the roadmap canvas; Send a pre-read to squads",
        facts="Spend came to €14,200 against a €15,000 budget.|The survey scored 4.6 out of 5 with 17 of 18 "
        "responses.|People asked for more unstructured time next time.|The product principles were voted on "
        "with dot stickers; five got clear majorities.|The hike to the Pena palace was the most mentioned "
        "moment in the survey.",
        notes="meeting: Offsite day one — strategy notes|journal: Offsite reflections|reference: Product "
        "principles (final)|meeting: Offsite retro",
        meetings="Offsite follow-up check|Roadmap draft review",
    ),
    project_text(
        "Home Renovation|home-renovation|paused|-120|90",
        tags="home|renovation|personal|budget",
        descriptions="Renovate the kitchen and bathroom of the flat in Arroios. Paused while we wait for the "
        "building permit.|Kitchen and bathroom works with Rui's crew, on hold until the câmara approves the "
        "permit for the kitchen wall.",
        summaries="Kitchen and bathroom renovation with Rui's crew, budget €28,000 (€6,400 spent so far on "
        "design and deposits). Paused until the câmara approves the permit for opening the kitchen wall; "
        "tiles and the quartz worktop are ordered.",
        overview="The flat in Arroios has a 1970s kitchen and a bathroom with a leaking shower tray. The "
        "plan: open the kitchen wall to the living room, new cabinets and a quartz worktop, and a walk-in "
        "shower. Rui's crew does the building work; the electrician and the plumber are his "
        "subcontractors.|Everything is paused until the permit for the kitchen wall comes through. Long-lead "
        "items (tiles, worktop, bathroom fixtures) are still being ordered so the crew can start the day the "
        "permit arrives.",
        goals="Finish within €28,000 including a 10% contingency|Kitchen usable again within six weeks of "
        "the start|No works on weekends, as agreed with the neighbours|A walk-in shower with no step and a "
        "proper slope",
        people="Rui Pereira — builder, runs the crew|Sofia — partner, co-decides everything|Helena Vaz — "
        "architect, permit drawings|Sr. Albuquerque — downstairs neighbour, worried about the noise",
        decisions="Open the kitchen wall: the structural engineer confirmed it is not load-bearing|Quartz "
        "worktop, not wood, because of the sink area|Walk-in shower instead of a bath|Stay in the flat "
        "during the bathroom work, move out for the kitchen weeks",
        questions="Do we replace the windows now or next year?|Where do we stay for the four kitchen "
        "weeks?|Is underfloor heating in the bathroom worth €1,800?",
        risks="Permit delays: the câmara quoted 6 to 10 weeks and we are in week 9|Rui's crew has another "
        "job lined up; a long delay loses our slot|Asbestos in the old floor tiles would add cost and "
        "weeks|Little budget room if the plumbing needs replacing",
        phases="Design: plans, quotes and permit drawings|Permit: submission and waiting for approval|Build: "
        "demolition, plumbing, electrics and finishes|Finish: snag list, cleaning and moving back",
        tasks="Call the câmara about the permit status|Confirm the tile delivery date|Choose kitchen cabinet "
        "handles|Get an asbestos test for the floor tiles|Compare quotes for new windows|Book a temporary "
        "flat for the kitchen weeks > Shortlist three rentals nearby; Check the pet policy for Miso; Book "
        "and pay the deposit|Pay Rui the second deposit|Decide on underfloor heating|Talk to Sr. Albuquerque "
        "about the noise schedule|Order bathroom fixtures > Pick the shower mixer; Order toilet and basin; "
        "Confirm delivery to the building|Update the renovation budget spreadsheet|Sign the contract "
        "addendum with Rui|Pack kitchen things into storage boxes|Check home insurance covers the "
        "works|Photograph the flat before demolition|Choose paint colours for the living room|Ask Helena for "
        "revised drawings",
        facts="The budget is €28,000; €6,400 is already spent on design and deposits.|The câmara said 6 to "
        "10 weeks for the permit; we are in week 9.|The tiles come from Viúva Lamego and arrive in about "
        "three weeks.|Rui can hold our slot for about a month before taking another job.|The structural "
        "engineer's report says the kitchen wall is a partition wall.|Sofia wants brushed brass handles; I "
        "like the black ones.",
        notes="reference: Renovation budget breakdown|meeting: Site visit with Rui and Helena|idea: Pantry "
        "in the old hallway cupboard|journal: Living in a half-built flat",
        meetings="Site visit with Rui|Call with Helena (architect)",
    ),
    project_text(
        "Marathon Training|marathon-training|active|-60|40",
        tags="running|health|marathon|personal",
        descriptions="Train for the Lisbon Marathon: a 16-week plan, four runs a week, goal time under four "
        "hours.|First marathon: Coach Marta's 16-week plan with long runs on Saturday mornings and physio "
        "for the knee.",
        summaries="Week 10 of a 16-week plan for the Lisbon Marathon. The long run is up to 28 km at an easy "
        "pace of 6:10/km. The left knee is fine after physio. Goal: finish under 4:00 without walking.",
        overview="My first marathon. The plan is Coach Marta's 16-week program: two easy runs, one workout "
        "(intervals or tempo) and a long run every week, plus strength twice a week. Running in the morning "
        "before work is what makes it stick.|After the knee niggle in week 6 we added physio exercises and "
        "cut one interval session. The next milestone is the 32 km long run in week 13, then the taper.",
        goals="Finish the Lisbon Marathon under four hours|Run four times a week, never missing two sessions "
        "in a row|No injury: physio exercises three times a week|Practise race-day nutrition on every long "
        "run",
        people="Marta — running coach, adjusts the plan weekly|Dr. Pinto — physiotherapist|Sofia — cheers at "
        "km 30 and drives to the start|Running club — the Thursday tempo group",
        decisions="Long runs on Saturday mornings, before the city heats up|A gel every 40 minutes, tested "
        "on long runs|New shoes broken in before week 12, not later|Drop the intervals if the knee "
        "complains; never push through pain",
        questions="Run with a pacer group or by feel?|Is 4:00 still realistic after the knee break?|What do "
        "I eat the night before?",
        risks="A work trip in week 13 clashes with the 32 km long run|The knee niggle could come back at "
        "higher mileage|Morning runs get skipped in launch weeks",
        phases="Base: easy mileage and strength|Build: workouts and longer long runs|Peak: 30+ km long runs|"
        "Taper: less volume, rest and race",
        tasks="Saturday long run *weekly|Physio exercises for the knee *daily|Tempo run with the club "
        "*weekly|Book a physio check-up|Buy new running shoes|Test gels on the long run|Plan the route for "
        "the 32 km run|Register for race bib pickup|Move the week 13 long run around the work trip|Log "
        "weekly mileage in Strava *weekly|Plan taper weeks with Marta > Review the taper plan draft; Adjust "
        "for the work trip; Confirm the race-week schedule|Buy anti-chafe balm and running socks|Book a "
        "sports massage after the 32 km run|Plan race-day logistics > Book parking near the start; Agree a "
        "meeting point with Sofia; Lay out the race kit the night before|Try pre-race dinner options|Check "
        "the knee with Dr. Pinto|Update the race goal after the 30 km run",
        facts="This is week 10 of 16; the longest run so far is 28 km.|Easy pace is around 6:10 per km; goal "
        "marathon pace is 5:40.|The knee niggle in week 6 went away with physio and a week of reduced "
        "mileage.|A gel every 40 minutes worked on the last two long runs.|Thursday tempo runs with the club "
        "start at 7:00 in Parque Eduardo VII.|Runs before 8:00 happen; runs planned for the evening mostly "
        "do not.",
        notes="journal: Week 10 training log|reference: Race-day checklist|research: Marathon nutrition "
        "reading|journal: Why mornings work for me",
        meetings="Physio appointment|Call with coach Marta",
    ),
    project_text(
        "Tax & Finances|tax-and-finances|active|-20|70",
        tags="finance|taxes|personal|admin",
        descriptions="Personal admin: the IRS tax return, e-Fatura receipts, freelance invoices and the "
        "mortgage renegotiation.|Get the joint IRS return to Carla early, validate every receipt and "
        "renegotiate the mortgage spread.",
        summaries="File the annual IRS return on time with Carla (accountant), claim the renovation and "
        "health deductions, check the NHR status, and renegotiate the mortgage spread before the fixed-rate "
        "period ends.",
        overview="Finances are a recurring source of anxiety because the deadlines are far apart and then "
        "suddenly all at once. This project collects all of it: the tax return, receipts in e-Fatura, the "
        "mortgage, and the small freelance advisory income that needs invoices in the Finanças portal.|Carla "
        "does the return; my job is to get her complete documents early, not at the last minute like last "
        "year.",
        goals="Documents to Carla a month before the deadline|Every e-Fatura receipt validated: health, "
        "education, renovation|Mortgage spread down by at least 0.3 points|Emergency fund back to six months "
        "of expenses after the renovation",
        people="Carla Mendes — accountant|Sofia — partner, joint return decisions|Bank manager at Millennium "
        "— mortgage renegotiation|Miguel Rocha — freelance client, advisory invoices",
        decisions="File jointly with Sofia this year; Carla ran both scenarios|All renovation invoices go "
        "through a company that issues proper faturas|Keep the emergency fund in a separate savings account",
        questions="Does the NHR status still apply after the rule change?|Fixed or variable rate for the "
        "next period?|Can the architect's fee be deducted?",
        risks="e-Fatura receipts not validated by the deadline lose the deduction|The fixed-rate period ends "
        "soon and rates may move|Freelance invoices issued late mean penalties",
        phases="Collect: receipts, statements and invoices|File: review with Carla and submit|Plan: mortgage "
        "and savings for next year",
        tasks="Validate pending receipts in e-Fatura|Send documents to Carla > Download bank statements; "
        "Export freelance invoices; Scan health receipts|Issue invoice to Miguel for advisory work|Book a "
        "call with the bank about the mortgage spread|Compare fixed and variable rate offers|Check NHR "
        "status with Carla|Pay the IMI instalment|Move the emergency fund to the savings account|Review the "
        "monthly budget *monthly|Cancel unused subscriptions|Set up an automatic transfer to savings|Add "
        "renovation expenses to the budget|File the quarterly social security declaration|Ask Carla if "
        "architect fees are deductible|Renew car insurance|Archive last year's tax documents|Check the IRS "
        "refund status",
        facts="Last year the documents reached Carla four days before the deadline; never again.|There are "
        "23 pending e-Fatura receipts, mostly the pharmacy and the gym.|The mortgage fixed-rate period ends "
        "in about five months.|Each freelance advisory invoice must be issued in the Finanças portal.|Carla "
        "charges a flat fee for the joint return and wants a single shared folder.|The IMI is paid in two "
        "instalments.",
        notes="reference: Tax documents checklist|meeting: Call with Carla about the joint return|reference: "
        "Mortgage offers comparison|journal: Money anxiety, written down",
        meetings="Call with Carla (accountant)|Bank meeting: mortgage spread",
    ),
    project_text(
        "Learning Spanish|learning-spanish|archived|-240|-60",
        tags="spanish|language|learning|personal",
        descriptions="Reach B1 Spanish for the Madrid team and trips. Archived after the tutor moved; may "
        "restart with a fixed weekly slot.|Spanish lessons with Lucía and Anki vocabulary, archived when "
        "the lessons stopped.",
        summaries="Weekly lessons with Lucía plus Anki got me from A2 to a solid B1 in speaking. Archived "
        "when Lucía moved to Valencia and the lessons stopped; the habit did not survive without the "
        "appointment.",
        overview="I started so I could talk to the Madrid sales team in their language and stop freezing on "
        "phone calls during trips. Lessons on Wednesdays at lunch with Lucía worked; Anki alone did not.|"
        "Archived, not abandoned. If restarted it needs a fixed appointment in the calendar, because "
        "self-study never survives a busy week.",
        goals="Hold a 30-minute call with the Madrid team in Spanish|Pass a mock DELE B1 speaking section|A "
        "60-day Anki streak|Read one novel in Spanish",
        people="Lucía Fernández — tutor, moved to Valencia|Carmen Ruiz — Madrid sales lead, practice partner|"
        "Sofia — patiently listens to my Spanish podcasts in the car",
        decisions="Lessons at lunchtime, not in the evening|Conversation over grammar drills|Archive the "
        "project instead of pretending it is active",
        questions="Online lessons with Lucía from Valencia?|Is a conversation exchange with Carmen enough?",
        risks="Without a fixed appointment the habit disappears|Portuguese interference: I keep mixing the "
        "two",
        phases="A2 to B1: weekly lessons and Anki|B1 consolidation: conversation practice",
        tasks="Anki review *daily|Weekly lesson with Lucía *weekly|Mock DELE speaking test|Read 'La sombra "
        "del viento' chapter by chapter|Practice call with Carmen|Write a short email to the Madrid team in "
        "Spanish|Listen to the 'Hoy Hablamos' podcast *weekdays|Review subjunctive notes|Ask Lucía about "
        "online lessons|Export an Anki deck backup|Decide whether to restart Spanish|Find a conversation "
        "exchange in Lisbon|Watch a Spanish series with Spanish subtitles|Learn a business vocabulary list > "
        "Meetings and scheduling; Numbers and pricing; Small talk phrases|Record myself describing my "
        "job|Plan a trip to the Madrid office",
        facts="Lessons with Lucía ran every Wednesday at 13:00 for seven months.|The Anki deck has 1,450 "
        "cards; the longest streak was 48 days.|Speaking improved faster than writing; the subjunctive is "
        "still shaky.|Carmen offered 20 minutes of practice after the Monday sales call.|The project was "
        "archived when Lucía moved to Valencia.",
        notes="journal: Why the Spanish habit stopped|reference: Useful business phrases in Spanish|idea: "
        "Restart plan: 15 minutes of Spanish after standup",
        meetings="Spanish practice with Carmen",
    ),
)
