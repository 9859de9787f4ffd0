#!/usr/bin/python3
"""The review desk in a real browser: headless Chromium (Debian's chromium and chromedriver)
driven by Debian's python3-selenium. Signs in, opens the queue, opens the oldest document with
the keyboard, checks that a German document's amounts and dates are shown as German writes
them, corrects the date, sees the words each field was read from outlined on the page as it takes
the focus, fills the total by clicking its word on the page, waits for the live check to accept it,
edits the line items in
their table (a row changed, one added and moved up, one added and removed, the sums checked as
they are typed), approves, and waits for
the desk to move on; on the next document, reprocesses it with the LLM extractor chosen in the
reprocess form by keyboard alone. Screenshots of both pages go to --out. Exit 0 on success, 1 on a failure,
77 when the browser cannot start (the caller skips then).

Run by the integration_review_browser test, which prepares the data and checks the database."""
import argparse
import json
import os
import sys

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as e:
    print(f"SKIP: python3-selenium is not installed ({e}); run deploy/install-deps.sh")
    sys.exit(77)


def start_browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1440,1000", "--hide-scrollbars", "--lang=en"):
        opts.add_argument(arg)
    driver_path = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
    try:
        return webdriver.Chrome(service=Service(driver_path), options=opts)
    except Exception as e:  # any failure to start: no browser on this machine
        print(f"SKIP: headless Chromium cannot start ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''});"
              " install chromium, chromium-driver and python3-selenium (deploy/install-deps.sh)")
        sys.exit(77)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--document", required=True)
    p.add_argument("--next", required=True)
    p.add_argument("--total", required=True)
    p.add_argument("--total-at", required=True, help="x,y of the total's word, fractions of the page")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    driver = start_browser()
    wait = WebDriverWait(driver, 30)
    try:
        # The queue sends a browser without a session to the login form.
        driver.get(a.url + "/review")
        wait.until(ec.url_contains("/review/login"))
        driver.find_element(By.ID, "name").send_keys(a.name)
        driver.find_element(By.ID, "token").send_keys(a.token)
        driver.find_element(By.ID, "signin").click()
        wait.until(ec.presence_of_element_located((By.ID, "queue")))
        rows = driver.find_elements(By.CSS_SELECTOR, "tr[data-href]")
        assert rows and rows[0].get_attribute("data-href").endswith(a.document), "the oldest document leads"
        assert "sel" in rows[0].get_attribute("class"), "the first row is selected"
        driver.save_screenshot(os.path.join(a.out, "review-queue.png"))

        # Keyboard: j moves down, k back up, Enter opens.
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys("j")
        body.send_keys("k")
        body.send_keys(Keys.ENTER)
        wait.until(ec.url_contains("/review/documents/" + a.document))
        # The page image is rendered and shown.
        wait.until(lambda d: d.execute_script(
            "var i=document.getElementById('pageimg');return i.complete&&i.naturalWidth>0;"))
        # A German document: its amounts and dates are shown as German writes them.
        assert "de-DE" in driver.find_element(By.ID, "locale").text
        total = driver.find_element(By.ID, "f-total")
        assert total.get_attribute("value") == "120,00", total.get_attribute("value")
        invoice_date = driver.find_element(By.ID, "f-invoice_date")
        assert invoice_date.get_attribute("value") == "01.03.2024", invoice_date.get_attribute("value")
        invoice_date.send_keys(Keys.CONTROL, "a")
        invoice_date.send_keys("15.03.2024")
        flagged = driver.find_element(By.CSS_SELECTOR, '.field[data-name="total"]')
        assert "flagged" in flagged.get_attribute("class"), "the failed check is shown at the total"

        # Focus a field: the words its value was read from are outlined on the page.
        image = driver.find_element(By.ID, "pageimg")
        mark = driver.find_element(By.ID, "mark")

        def outlined():
            """The outline's box as fractions of the page image, or None when hidden."""
            return driver.execute_script(
                "var m=document.getElementById('mark');if(m.hidden)return null;"
                "var i=document.getElementById('pageimg').getBoundingClientRect(),r=m.getBoundingClientRect();"
                "return [(r.left-i.left)/i.width,(r.top-i.top)/i.height,(r.right-i.left)/i.width,"
                "(r.bottom-i.top)/i.height];")

        def near(box, expected):
            return box is not None and all(abs(x - y) < 0.01 for x, y in zip(box, expected))

        driver.find_element(By.ID, "f-subtotal").click()
        assert near(outlined(), [0.8, 0.6, 0.88, 0.615]), f"the subtotal's words are outlined: {outlined()}"
        driver.find_element(By.ID, "f-invoice_number").click()
        assert near(outlined(), [0.72, 0.2, 0.78, 0.215]), f"the invoice number's: {outlined()}"
        # The total the machine read (120) is not on the page: nothing to outline.
        total.click()
        assert outlined() is None, "no outline for a value that is not on the page"
        assert not mark.is_displayed()
        # Click the total's word on the page: the focused field takes it.
        # (The point scrolled into view, then clicked where the viewport shows it.)
        x, y = (float(v) for v in a.total_at.split(","))
        vx, vy = driver.execute_script(
            "var i=arguments[0],r=i.getBoundingClientRect();"
            "window.scrollBy(0,r.top+arguments[2]*r.height-window.innerHeight/2);"
            "r=i.getBoundingClientRect();return [r.left+arguments[1]*r.width,r.top+arguments[2]*r.height];",
            image, x, y)
        actions = ActionBuilder(driver)
        actions.pointer_action.move_to_location(int(vx), int(vy)).click()
        actions.perform()
        assert total.get_attribute("value") == a.total, total.get_attribute("value")
        assert near(outlined(), [0.8, 0.64, 0.88, 0.655]), f"the clicked word is outlined: {outlined()}"
        # The live check accepts the corrected data.
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Valid"))
        # The check no longer flags the total.
        assert "flagged" not in flagged.get_attribute("class"), "the corrected total is no longer flagged"

        # Line items, as a table: the one line, its sum agreeing with the subtotal.
        def rows():
            return driver.find_elements(By.CSS_SELECTOR, "#li-rows tr")

        def cell(row, col):
            return rows()[row].find_element(By.CSS_SELECTOR, f'[data-col="{col}"]')

        def type_into(row, col, text):
            el = cell(row, col)
            el.send_keys(Keys.CONTROL, "a")
            el.send_keys(text)

        def line_sum():
            return driver.find_element(By.ID, "li-sum").text

        lines_field = driver.find_element(By.CSS_SELECTOR, '.field[data-name="line_items"]')
        assert len(rows()) == 1, "one line item"
        assert cell(0, "description").get_attribute("value") == "Widget"
        assert line_sum() == "1 line, sum 100,00 = subtotal 100,00", line_sum()
        # A cell with focus outlines its value's word on the line: the unit price left of the
        # amount.
        cell(0, "amount").click()
        assert near(outlined(), [0.8, 0.45, 0.88, 0.465]), f"the line's amount: {outlined()}"
        cell(0, "unit_price").click()
        assert near(outlined(), [0.6, 0.45, 0.68, 0.465]), f"the line's unit price: {outlined()}"
        # Edit the row: quantity x unit price no longer gives the amount, which the row shows.
        type_into(0, "description", "Widget A")
        type_into(0, "quantity", "2")
        type_into(0, "unit_price", "40,00")
        assert "rowbad" in rows()[0].get_attribute("class"), "2 x 40 is not 100"
        type_into(0, "amount", "80")
        assert "rowbad" not in rows()[0].get_attribute("class"), "2 x 40 is 80"
        assert line_sum() == "1 line, sum 80,00 \u2260 subtotal 100,00 (20,00 apart)", line_sum()
        # The desk's own check flags the lines too.
        wait.until(lambda d: "flagged" in lines_field.get_attribute("class"))
        # Add a line that makes the sum right again.
        driver.find_element(By.ID, "li-add").click()
        assert len(rows()) == 2, "a line added"
        # What was typed is shown as German writes it once the field is left.
        assert cell(0, "amount").get_attribute("value") == "80,00", cell(0, "amount").get_attribute("value")
        assert driver.switch_to.active_element == cell(1, "description"), "the new line has focus"
        type_into(1, "description", "Setup")
        type_into(1, "quantity", "1")
        type_into(1, "unit_price", "20")
        type_into(1, "amount", "20,00")
        assert line_sum() == "2 lines, sum 100,00 = subtotal 100,00", line_sum()
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Valid"))
        assert "flagged" not in lines_field.get_attribute("class"), "the lines agree again"
        # Reorder: the new line moves up.
        rows()[1].find_element(By.CSS_SELECTOR, '[data-act="up"]').click()
        assert [cell(i, "description").get_attribute("value") for i in range(2)] == ["Setup", "Widget A"]
        # A line added by mistake is removed.
        driver.find_element(By.ID, "li-add").click()
        assert len(rows()) == 3
        assert line_sum() == "3 lines: an amount is missing", line_sum()
        rows()[2].find_element(By.CSS_SELECTOR, '[data-act="remove"]').click()
        assert len(rows()) == 2, "the empty line removed"
        assert line_sum() == "2 lines, sum 100,00 = subtotal 100,00", line_sum()
        driver.execute_script("document.activeElement.blur();window.scrollTo(0,0);")
        driver.save_screenshot(os.path.join(a.out, "review-document.png"))

        # The supplier's name as it is really written: a correction the desk learns from.
        supplier = driver.find_element(By.ID, "f-supplier_name")
        supplier.send_keys(Keys.CONTROL, "a")
        supplier.send_keys("Acme Widgets GmbH")

        # Approved, the desk moves on to the next document.
        driver.find_element(By.ID, "approve").click()
        wait.until(ec.url_contains("/review/documents/" + a.next))

        # Reprocess with the keyboard: r to the form, Tab to the extraction select, down to "llm",
        # Tab to the button, Enter.
        # The page's script is in place once the document has loaded.
        wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
        # A document in no clear language shows its values as stored.
        shown = driver.find_element(By.ID, "f-total").get_attribute("value")
        assert shown == "120", shown
        assert driver.find_element(By.ID, "f-invoice_date").get_attribute("value") == "2024-03-01"
        assert not driver.find_elements(By.ID, "locale"), "no locale note"
        driver.find_element(By.TAG_NAME, "body").send_keys("r")
        active = driver.switch_to.active_element
        assert active.get_attribute("id") == "rp-transcription", "r focuses the reprocess form"
        active.send_keys(Keys.TAB)
        extraction = driver.switch_to.active_element
        assert extraction.get_attribute("id") == "rp-extraction", "Tab reaches the extraction select"
        while extraction.get_attribute("value") != "llm":
            before = extraction.get_attribute("value")
            extraction.send_keys(Keys.ARROW_DOWN)
            assert extraction.get_attribute("value") != before, "the arrow keys choose a provider"
        extraction.send_keys(Keys.TAB)
        button = driver.switch_to.active_element
        assert button.get_attribute("id") == "reprocess", "Tab reaches the Reprocess button"
        button.send_keys(Keys.ENTER)
        # Sent, the desk goes back to the queue (this was the last document); a refusal would stay.
        wait.until(lambda d: d.current_url.endswith("/review"))

        # The Learned page lists what the correction taught, under the supplier's VAT id and its
        # name as the machine read them; Forget deletes one.
        driver.find_element(By.LINK_TEXT, "Learned").click()
        wait.until(ec.url_contains("/review/knowledge"))
        learned = driver.find_elements(By.CSS_SELECTOR, "main tbody tr")
        assert len(learned) == 2, [r.text for r in learned]
        assert all("Acme Widgets GmbH" in r.text and "1 review" in r.text for r in learned), \
            [r.text for r in learned]
        driver.save_screenshot(os.path.join(a.out, "review-learned.png"))
        learned[0].find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "main tbody tr")) == 1)
        print(json.dumps({"ok": True, "screenshots": ["review-queue.png", "review-document.png",
                                                       "review-learned.png"]}))
        return 0
    except Exception as e:
        driver.save_screenshot(os.path.join(a.out, "review-failure.png"))
        print(f"FAILED: {type(e).__name__}: {e}; page {driver.current_url}")
        # What the page said (a refusal, an error text) is most of the diagnosis.
        print(driver.find_element(By.TAG_NAME, "body").text[:2000])
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
