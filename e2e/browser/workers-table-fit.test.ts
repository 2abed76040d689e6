import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { heading, visible } from "./support/console-actions.js";
import { saveScreenshot } from "./support/screenshots.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// The Workers page's instance table on a laptop (1,280 px): an instance name, a "gateway thread (pid)" column
// and five figures. The table must fit inside its card, every column in view (on a phone it turns into cards,
// data-tables.test.ts); the card itself never reaches past the page's main column.
const SPEC = fileURLToPath(import.meta.url);
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const ADMIN = { email: "workers-fit-admin@example.com", password: "a long enough passphrase" };

interface Fit {
  /** How far the card reaches past the right edge of the main column (px; <= 0 is inside). */
  cardPastMain: number;
  /** How far the card's own content reaches past its padding box (px; <= 0 is none). */
  cardOverflow: number;
  /** How far the table's scroller reaches past the card's content box (px; <= 0 is inside). */
  scrollerPastCard: number;
  /** How far the table reaches past its scroller's box (px; > 0 when the table scrolls sideways in the card). */
  tablePastScroller: number;
  /** How far the main column reaches past the viewport (px; <= 0 is inside). */
  mainPastViewport: number;
  /** The page's horizontal overflow (px). */
  pageOverflow: number;
}

describe("console: the Workers page's instance table on a laptop", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });

  it("keeps the instance table inside its card at 1280x800, in both themes", async () => {
    const { page } = system.session;
    await page.setViewportSize({ width: 1280, height: 800 });
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto("/workers");
      await visible(heading(page, "Workers"));
      const table = await visible(page.getByRole("table", { name: "Model instances" }));
      // The "CPU now" column fills in on the second reading (5 s): the widest the table gets.
      await visible(table.getByRole("cell", { name: /^\d+(\.\d{1,2})? %$/ }), 15_000);
      const fit = await table.evaluate((element): Fit => {
        const scroller = element.parentElement!;
        const card = element.closest("section.card")!;
        const main = element.closest("main")!;
        const cardBox = card.getBoundingClientRect();
        const style = getComputedStyle(card);
        const contentRight =
          cardBox.right - Number.parseFloat(style.borderRightWidth) - Number.parseFloat(style.paddingRight);
        return {
          cardPastMain: cardBox.right - main.getBoundingClientRect().right,
          cardOverflow: card.scrollWidth - card.clientWidth,
          scrollerPastCard: scroller.getBoundingClientRect().right - contentRight,
          tablePastScroller: element.getBoundingClientRect().width - scroller.clientWidth,
          mainPastViewport: main.getBoundingClientRect().right - document.documentElement.clientWidth,
          pageOverflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        };
      });
      await saveScreenshot(page, SPEC, `workers table at 1280 ${scheme}`);
      expect(fit.cardPastMain, `${scheme}: the card stays in the main column`).toBeLessThanOrEqual(0.5);
      expect(fit.cardOverflow, `${scheme}: nothing overflows the card`).toBeLessThanOrEqual(0);
      expect(fit.scrollerPastCard, `${scheme}: the table's scroller stays in the card`).toBeLessThanOrEqual(0.5);
      expect(fit.mainPastViewport, `${scheme}: the main column stays in the window`).toBeLessThanOrEqual(0.5);
      expect(fit.pageOverflow, `${scheme}: the page does not scroll sideways`).toBeLessThanOrEqual(0);
      // On a laptop the whole table fits: no column (RSS, the last) scrolled out of sight behind the card's edge.
      // Before the backend and its placement shared a column, the table was 49 px wider than its scroller.
      expect(fit.tablePastScroller, `${scheme}: the table fits its card without scrolling`).toBeLessThanOrEqual(0.5);
      for (const header of await table.getByRole("columnheader").all()) {
        const inside = await header.evaluate((cell) => {
          const card = cell.closest("section.card")!.getBoundingClientRect();
          const box = cell.getBoundingClientRect();
          return box.left >= card.left && box.right <= card.right;
        });
        expect(inside, `${scheme}: the ${await header.textContent()} column is in the card`).toBe(true);
      }
    }
    await page.emulateMedia({ colorScheme: "light" });
    expect(system.session.errors).toEqual([]);
  }, 120_000);
});
